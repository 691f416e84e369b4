package session

// LeftCheckAfter is leftCheckAfter for the tests of package session_test.
const LeftCheckAfter = leftCheckAfter
