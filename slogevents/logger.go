package slogevents

import (
	"context"
	"log/slog"

	"github.com/rxbulkhead/bulkhead"
)

// Logger logs the events of bulkheads that need attention — rejections and
// cancellations — with log/slog. Permitted and finished calls are the normal
// flow and are not logged; count them with metrics instead.
//
// Its Log method is an event listener:
//
//	remove := s.OnEvent(slogevents.Logger{Logger: logger}.Log)
//
// A rejection is logged as "bulkhead call rejected" with the attributes
// bulkhead (the name) and reason (e.g. "queue full"); a cancellation as
// "bulkhead call cancelled" with the attribute bulkhead. The record's time is
// the event's time, read from the bulkhead's Clock. The zero Logger is
// ready to use.
type Logger struct {
	// Logger receives the records. Nil means slog.Default() at the time of
	// each event.
	Logger *slog.Logger
	// RejectedLevel is the level of rejections. Nil means slog.LevelWarn.
	RejectedLevel slog.Leveler
	// CancelledLevel is the level of cancellations. Nil means
	// slog.LevelInfo.
	CancelledLevel slog.Leveler
}

// Log logs e if it is a rejection or a cancellation and the logger is
// enabled for its level; it ignores every other event. It runs on the
// goroutine that publishes the event, so it costs that goroutine the
// handler's time.
func (l Logger) Log(e bulkhead.Event) {
	var (
		level slog.Leveler
		msg   string
	)
	switch e.Type {
	case bulkhead.CallRejected:
		level, msg = l.RejectedLevel, "bulkhead call rejected"
		if level == nil {
			level = slog.LevelWarn
		}
	case bulkhead.CallCancelled:
		level, msg = l.CancelledLevel, "bulkhead call cancelled"
		if level == nil {
			level = slog.LevelInfo
		}
	default:
		return
	}
	logger := l.Logger
	if logger == nil {
		logger = slog.Default()
	}
	ctx := context.Background()
	if !logger.Enabled(ctx, level.Level()) {
		return
	}
	r := slog.NewRecord(e.Time, level.Level(), msg, 0)
	if e.Type == bulkhead.CallRejected {
		r.AddAttrs(slog.String("bulkhead", e.Name), slog.String("reason", e.Reason.String()))
	} else {
		r.AddAttrs(slog.String("bulkhead", e.Name))
	}
	_ = logger.Handler().Handle(ctx, r)
}
