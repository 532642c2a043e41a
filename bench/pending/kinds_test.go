package pending_test

func kinds() []kind { return coreKinds }
