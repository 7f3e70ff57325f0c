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
    /// CPU seconds so far of each group of the process's threads (Linux; empty elsewhere): the
    /// event loops (`NIO-…`), Swift's cooperative pool, thread pools, each named by its threads'
    /// name without their number. A thread that ended is not counted.
    var secondsByThread: [String: Double] = [:]

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
            contextSwitches: Int(usage.ru_nvcsw) + Int(usage.ru_nivcsw), secondsByThread: threadSeconds())
    }

    /// Each thread's `utime + stime` from `/proc/self/task/TID/stat`, summed by its name without
    /// the number at its end (`NIO-SGLTN-1-#0` and `NIO-SGLTN-1-#1` are `NIO-SGLTN-1`).
    private static func threadSeconds() -> [String: Double] {
        #if os(Linux)
        guard let tasks = opendir("/proc/self/task") else { return [:] }
        defer { closedir(tasks) }
        let hertz = Double(sysconf(Int32(_SC_CLK_TCK)))
        var groups: [String: Double] = [:]
        while let entry = readdir(tasks) {
            let tid = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            guard tid.first?.isNumber == true, let stat = read("/proc/self/task/\(tid)/stat"),
                let open = stat.firstIndex(of: "("), let close = stat.lastIndex(of: ")")
            else { continue }
            // The name is in parentheses (it may hold spaces); utime and stime are the 14th and
            // 15th fields, the 12th and 13th after the name.
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { continue }
            var name = Substring(stat[stat.index(after: open)..<close])
            while let last = name.last, last.isNumber || last == "#" || last == "-" || last == "_" { name = name.dropLast() }
            groups[String(name), default: 0] += (user + system) / hertz
        }
        return groups
        #else
        return [:]
        #endif
    }

    #if os(Linux)
    private static func read(_ path: String) -> String? {
        let descriptor = open(path, O_RDONLY)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes = [UInt8](repeating: 0, count: 1024)
        let count = bytes.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
        return count > 0 ? String(decoding: bytes.prefix(count), as: UTF8.self) : nil
    }
    #endif

    var cpuSeconds: Double { userSeconds + systemSeconds }

    /// A benchmark's `cpu` and `peak memory` lines, for the CPU used since `before` over `seconds`.
    func printUsage(since before: ProcessStats, over seconds: Double) {
        let cpu = cpuSeconds - before.cpuSeconds
        Terminal.line("cpu         \(format(cpu)) s (\(format(cpu / seconds * 100)) % of one core)")
        Terminal.line("peak memory \(format(Double(peakResidentBytes) / 1_048_576)) MiB")
    }

    /// The same as JSON keys: `cpu_seconds`, `peak_memory_bytes`, `context_switches` and (Linux)
    /// `cpu_seconds_by_thread`.
    func writeUsage(since before: ProcessStats, into writer: inout JSONWriter) {
        writer.key("cpu_seconds"); writer.double(cpuSeconds - before.cpuSeconds)
        writer.key("peak_memory_bytes"); writer.int(peakResidentBytes)
        writer.key("context_switches"); writer.int(contextSwitches - before.contextSwitches)
        if !secondsByThread.isEmpty {
            writer.key("cpu_seconds_by_thread")
            let spent = secondsByThread.reduce(into: [String: JSONValue]()) { $0[$1.key] = .double($1.value - (before.secondsByThread[$1.key] ?? 0)) }
            writer.value(.object(spent))
        }
    }
}
