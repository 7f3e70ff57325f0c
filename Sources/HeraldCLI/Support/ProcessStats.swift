import HeraldCore

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
    /// Context switches, voluntary (waiting) and not (preempted), of all the process's threads.
    var contextSwitches: Int

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
        return ProcessStats(userSeconds: seconds(usage.ru_utime), systemSeconds: seconds(usage.ru_stime), peakResidentBytes: peak,
            contextSwitches: Int(usage.ru_nvcsw) + Int(usage.ru_nivcsw))
    }

    var cpuSeconds: Double { userSeconds + systemSeconds }

    /// A benchmark's `cpu` and `peak memory` lines, for the CPU used since `before` over `seconds`.
    func printUsage(since before: ProcessStats, over seconds: Double) {
        let cpu = cpuSeconds - before.cpuSeconds
        Terminal.line("cpu         \(format(cpu)) s (\(format(cpu / seconds * 100)) % of one core)")
        Terminal.line("peak memory \(format(Double(peakResidentBytes) / 1_048_576)) MiB")
    }

    /// The same as JSON keys: `cpu_seconds`, `peak_memory_bytes` and `context_switches`.
    func writeUsage(since before: ProcessStats, into writer: inout JSONWriter) {
        writer.key("cpu_seconds"); writer.double(cpuSeconds - before.cpuSeconds)
        writer.key("peak_memory_bytes"); writer.int(peakResidentBytes)
        writer.key("context_switches"); writer.int(contextSwitches - before.contextSwitches)
    }
}
