import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// How the C library's allocator (glibc's `malloc`, on Linux) treats large blocks in this
/// process, set once when the first server is built.
///
/// By default glibc serves a block over its mmap threshold with a mapping of its own and
/// unmaps it on `free`, and gives a heap's free top back to the system past a trim threshold;
/// it raises the first threshold to the largest block it has freed so far. An answer of a
/// thousand records (a 600 KB change page, its `[UInt8]` and the `ByteBuffer` it is copied
/// into) then lands on the threshold itself, and every request faulted in fresh pages for it:
/// about 450 page faults and a tenth of the server's time for each such page. Here blocks up
/// to 16 MiB (an answer's most, with room) come from the heaps, and a heap gives its free top
/// back only past 32 MiB, so the pages of one answer serve the next.
///
/// An operator who sets glibc's own knobs (`GLIBC_TUNABLES` naming a `glibc.malloc.` tunable, or
/// `MALLOC_MMAP_THRESHOLD_`/`MALLOC_TRIM_THRESHOLD_`) keeps them: nothing is changed then.
enum MallocTuning {
    static let applied: Void = {
        #if canImport(Glibc)
        guard !leftToOperator(ProcessInfo.processInfo.environment) else { return }
        // `mallopt` and its parameters (malloc.h, which Glibc's module leaves out), looked up
        // in the process's libraries; a C library without it is left as it is.
        typealias Mallopt = @convention(c) (Int32, Int32) -> Int32
        let trimThreshold: Int32 = -1, mmapThreshold: Int32 = -3
        guard let process = dlopen(nil, RTLD_NOW), let symbol = dlsym(process, "mallopt") else { return }
        let mallopt = unsafeBitCast(symbol, to: Mallopt.self)
        _ = mallopt(mmapThreshold, 16 << 20)
        _ = mallopt(trimThreshold, 32 << 20)
        #endif
    }()

    /// Whether `environment` sets glibc's own malloc knobs, so that nothing is changed.
    static func leftToOperator(_ environment: [String: String]) -> Bool {
        environment["GLIBC_TUNABLES"]?.contains("glibc.malloc.") == true
            || environment["MALLOC_MMAP_THRESHOLD_"] != nil || environment["MALLOC_TRIM_THRESHOLD_"] != nil
    }
}
