import Testing
import HummingbirdTesting
@Test func t2() {}
