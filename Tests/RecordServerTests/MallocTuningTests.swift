import Testing
@testable import RecordServer

/// The server's allocator settings (``MallocTuning``) give way to an operator's own.
@Suite struct MallocTuningTests {
    /// glibc's knobs set in the environment, as tunables or as its older variables, leave the
    /// allocator as the operator set it; tunables of other parts of glibc don't.
    @Test func anOperatorsMallocSettingsAreKept() {
        #expect(!MallocTuning.leftToOperator([:]))
        #expect(!MallocTuning.leftToOperator(["GLIBC_TUNABLES": "glibc.pthread.rseq=0", "MALLOC_ARENA_MAX_X": "2"]))
        #expect(MallocTuning.leftToOperator(["GLIBC_TUNABLES": "glibc.malloc.mmap_threshold=131072"]))
        #expect(MallocTuning.leftToOperator(["GLIBC_TUNABLES": "glibc.pthread.rseq=0:glibc.malloc.trim_threshold=0"]))
        #expect(MallocTuning.leftToOperator(["MALLOC_MMAP_THRESHOLD_": "131072"]))
        #expect(MallocTuning.leftToOperator(["MALLOC_TRIM_THRESHOLD_": "0"]))
    }
}
