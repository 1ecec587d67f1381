# shellcheck shell=bash
# bench/cpu.sh, sourced by the bench scripts: a server's CPU time.
#
# cpu_ns PID: the CPU time process PID's threads have run so far, in
# nanoseconds: the sum of the first field of /proc/PID/task/*/schedstat
# (time on a CPU, in ns). The clock ticks of /proc/PID/stat (utime +
# stime, 1/100 s each) know a run of 0.4 s of CPU only to within 2.5 %;
# schedstat is exact. A thread that exits between two readings takes its
# time with it (the servers' threads live as long as the process). Where
# the kernel gives no schedstat, the ticks are used, converted to ns. It
# fails when there is no such process.
cpu_ns() {
	local f s
	[[ -d /proc/$1 ]] || { echo "cpu_ns: no process $1" >&2; return 1; }
	if compgen -G "/proc/$1/task/*/schedstat" >/dev/null; then
		cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{ s += $1 } END { printf "%.0f\n", s }'
		return
	fi
	s=$(<"/proc/$1/stat") || return 1
	s=${s##*) } # the fields after the command name, which may hold spaces
	read -r -a f <<<"$s"
	echo $(((f[11] + f[12]) * (1000000000 / $(getconf CLK_TCK))))
}
