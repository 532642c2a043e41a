package adaptive

// HingeLevels is the number of levels h keeps (its state's size).
func HingeLevels(h *Hinge) int { return len(h.lv) }
