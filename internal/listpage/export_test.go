package listpage

// WholePage is wholePage, for the tests of package listpage_test.
const WholePage = wholePage
