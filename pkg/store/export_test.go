package store

// InsertedOrders exposes insertedOrders to the external tests, which need
// testenv (it imports this package).
var InsertedOrders = insertedOrders
