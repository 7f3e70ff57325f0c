#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// CPU time and peak memory of this process, from getrusage(2).
struct ProcessStats {
    var userSeconds: Double
    var systemSeconds: Double
    /// Peak resident set size in bytes.
    var peakResidentBytes: Int

    static func now() -> ProcessStats {
        var usage = rusage()
        #if os(Linux)
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        #else
        getrusage(RUSAGE_SELF, &usage)
        #endif
        func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
        #if os(Linux)
        let peak = Int(usage.ru_maxrss) * 1024  // kilobytes on Linux
        #else
        let peak = Int(usage.ru_maxrss)
        #endif
        return ProcessStats(userSeconds: seconds(usage.ru_utime), systemSeconds: seconds(usage.ru_stime), peakResidentBytes: peak)
    }

    var cpuSeconds: Double { userSeconds + systemSeconds }
}
