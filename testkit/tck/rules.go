package tck

// Rule is a Reactive Streams rule the suite checks: its number (as in the
// specification, "1.1") and its text, quoted in failure messages.
type Rule struct {
	ID   string
	Text string
}

// Name is the subtest name of the rule's check, e.g. "rule_1.1".
func (r Rule) Name() string { return "rule_" + r.ID }

// String returns `rule 1.1 ("The total number of onNext...")`, the form
// failure messages use.
func (r Rule) String() string { return "rule " + r.ID + " (\"" + r.Text + "\")" }

// Rules returns the rules VerifyPublisher checks, in the order it checks
// them (1.1, 1.3, 1.4, 1.5, 1.7, 1.9, 2.13, 3.3, 3.6, 3.7, 3.8, 3.9, 3.13,
// 3.17), then rule 2.12, which the recording subscriber checks on every
// signal. The texts are those of the Reactive Streams specification (JVM
// 1.0.4), with Java's null and exceptions read as Go's nil and panics.
// The rules are known by their number, as in the specification; the
// variables below are unexported so that the package exports no
// Rule1_1-style names.
func Rules() []Rule {
	return []Rule{
		ruleDemand, ruleSerialSignals, ruleErrorSignalled, ruleCompletionSignalled,
		ruleNothingAfterTerminal, ruleOnSubscribeFirst, ruleNoNilArguments, ruleBoundedRecursion,
		ruleRequestAfterCancelIsNoop, ruleCancelAfterCancelIsNoop, ruleRequestAddsDemand,
		ruleNonPositiveRequestFails, ruleCancelDropsSubscriber, ruleUnboundedDemand, ruleOnSubscribeOnce,
	}
}

var (
	ruleDemand               = Rule{"1.1", "The total number of onNext´s signalled by a Publisher to a Subscriber MUST be less than or equal to the total number of elements requested by that Subscriber´s Subscription at all times."}
	ruleSerialSignals        = Rule{"1.3", "onSubscribe, onNext, onError and onComplete signaled to a Subscriber MUST be signaled serially."}
	ruleErrorSignalled       = Rule{"1.4", "If a Publisher fails it MUST signal an onError."}
	ruleCompletionSignalled  = Rule{"1.5", "If a Publisher terminates successfully (finite stream) it MUST signal an onComplete."}
	ruleNothingAfterTerminal = Rule{"1.7", "Once a terminal state has been signaled (onError, onComplete) it is REQUIRED that no further signals occur."}
	ruleOnSubscribeFirst     = Rule{"1.9", "Publisher.subscribe MUST call onSubscribe on the provided Subscriber prior to any other signal to that Subscriber and MUST return normally, except when the provided Subscriber is null [...]; the only legal way to signal failure (or reject the Subscriber) is by calling onError (after calling onSubscribe)."}
	// ruleNoNilArguments covers a nil Subscriber given to Subscribe: the
	// specification states that case in rule 1.9 ("except when the provided Subscriber is
	// null in which case it MUST throw a java.lang.NullPointerException")
	// and the general one in 2.13, so a panic naming either is accepted.
	ruleNoNilArguments           = Rule{"2.13", "Calling onSubscribe, onNext, onError or onComplete MUST return normally except when any provided parameter is null in which case it MUST throw a java.lang.NullPointerException to the caller [rule 1.9: Publisher.subscribe with a null Subscriber MUST throw it]."}
	ruleBoundedRecursion         = Rule{"3.3", "Subscription.request MUST place an upper bound on possible synchronous recursion between Publisher and Subscriber."}
	ruleRequestAfterCancelIsNoop = Rule{"3.6", "After the Subscription is cancelled, additional Subscription.request(long n) MUST be NOPs."}
	ruleCancelAfterCancelIsNoop  = Rule{"3.7", "After the Subscription is cancelled, additional Subscription.cancel() MUST be NOPs."}
	ruleRequestAddsDemand        = Rule{"3.8", "While the Subscription is not cancelled, Subscription.request(long n) MUST register the given number of additional elements to be produced to the respective subscriber."}
	ruleNonPositiveRequestFails  = Rule{"3.9", "While the Subscription is not cancelled, Subscription.request(long n) MUST signal onError with a java.lang.IllegalArgumentException if the argument is <= 0."}
	ruleCancelDropsSubscriber    = Rule{"3.13", "While the Subscription is not cancelled, Subscription.cancel() MUST request the Publisher to eventually drop any references to the corresponding subscriber."}
	ruleUnboundedDemand          = Rule{"3.17", "A Subscription MUST support an unbounded number of calls to request and MUST support a demand up to 2^63-1 (java.lang.Long.MAX_VALUE)."}
	// ruleOnSubscribeOnce is checked by the recording subscriber on every signal.
	ruleOnSubscribeOnce = Rule{"2.12", "Subscriber.onSubscribe MUST be called at most once for a given Subscriber."}
)
