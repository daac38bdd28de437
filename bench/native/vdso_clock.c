/* Benchmark-only experiment, never shipped: what the KPL daemon would cost if its clock reads went
 * through the vDSO.
 *
 * The KPL's release binaries (1.0.7 to 1.1.1) link a libstdc++ built for a glibc older than 2.17, whose
 * std::chrono::steady_clock::now() is `syscall(SYS_clock_gettime, ...)`: a real system call, where a
 * current build reads the clock in user space. The daemon calls it several times per user record (its
 * per-record metrics, deadlines, timers). Preloaded into the daemon (bench/tuning.py starts it through a
 * wrapper script as kpl.NativeExecutable), this answers that one syscall from libc's clock_gettime, which
 * uses the vDSO, and passes every other syscall on unchanged.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdarg.h>
#include <sys/syscall.h>
#include <time.h>

typedef long (*syscall_fn)(long, ...);

long syscall(long number, ...) {
  static syscall_fn next;
  va_list ap;
  va_start(ap, number);
  long a1 = va_arg(ap, long), a2 = va_arg(ap, long), a3 = va_arg(ap, long);
  long a4 = va_arg(ap, long), a5 = va_arg(ap, long), a6 = va_arg(ap, long);
  va_end(ap);
  if (number == SYS_clock_gettime) return clock_gettime((clockid_t)a1, (struct timespec *)a2);
  if (next == NULL) next = (syscall_fn)dlsym(RTLD_NEXT, "syscall");
  return next(number, a1, a2, a3, a4, a5, a6);
}
