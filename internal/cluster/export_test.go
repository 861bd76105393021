package cluster

// WholePage is wholePage, for the tests of package cluster_test.
const WholePage = wholePage
