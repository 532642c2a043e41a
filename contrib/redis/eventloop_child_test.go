package redis_test

func eventLoopChild(p childParams) (childResult, error) { return childResult{}, nil }
