package bulkhead

// poolTaskList is an intrusive doubly linked list of tasks through their
// prev and next fields, oldest at head. A task is in at most one list at a
// time: the queue or the running set (under the Pool's mu), or a local list
// of outcomes to deliver that only its builder touches.
type poolTaskList struct {
	head, tail *poolTask
	n          int
}

func (l *poolTaskList) push(t *poolTask) {
	t.prev = l.tail
	t.next = nil
	if l.tail != nil {
		l.tail.next = t
	} else {
		l.head = t
	}
	l.tail = t
	l.n++
}

func (l *poolTaskList) remove(t *poolTask) {
	if t.prev != nil {
		t.prev.next = t.next
	} else {
		l.head = t.next
	}
	if t.next != nil {
		t.next.prev = t.prev
	} else {
		l.tail = t.prev
	}
	t.prev, t.next = nil, nil
	l.n--
}
