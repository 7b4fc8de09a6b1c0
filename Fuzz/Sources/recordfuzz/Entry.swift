// libFuzzer's entry: one binary holds every target (Targets.swift); RECORDSYNC_FUZZ_TARGET
// picks one.
import Foundation

let target: FuzzTarget = {
    guard let name = ProcessInfo.processInfo.environment["RECORDSYNC_FUZZ_TARGET"], let target = FuzzTarget(rawValue: name) else {
        fatalError("set RECORDSYNC_FUZZ_TARGET to one of \(FuzzTarget.allCases.map(\.rawValue))")
    }
    return target
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ start: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    target.run(Data(bytes: start, count: count))
    return 0
}
