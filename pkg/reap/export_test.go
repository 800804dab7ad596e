package reap

// ReservedItems is the orphan sweep's scan of the items holding a
// reservation (reservedItems), for its tests.
var ReservedItems = reservedItems
