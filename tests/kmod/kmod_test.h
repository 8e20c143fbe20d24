/*
 * kmod_test.h - the little test harness shared by fakegpu-abi-test and
 * fakegpu-fuzz: raw ioctl/mmap wrappers and PASS/FAIL lines that
 * tests/vm/guest/fakegpu.sh turns into TAP.
 *
 * Output: one line per check, "PASS <name>" or "FAIL <name>: <why>", plus
 * "# ..." diagnostics.  The exit status is 1 if any check failed.
 */
#ifndef KMOD_TEST_H
#define KMOD_TEST_H

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>

#include <fakegpu.h>

static int kt_failures;
static int kt_checks;

static inline const char *kt_errname(int err)
{
	const char *name;

	if (err == 0)
		return "success";
	name = strerrorname_np(err);
	return name ? name : "E?";
}

static inline void kt_pass(const char *name)
{
	kt_checks++;
	printf("PASS %s\n", name);
	fflush(stdout);
}

__attribute__((format(printf, 2, 3)))
static inline void kt_fail(const char *name, const char *fmt, ...)
{
	va_list ap;

	kt_checks++;
	kt_failures++;
	printf("FAIL %s: ", name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

/* 0 or the errno of ioctl(fd, cmd, arg). */
static inline int kt_ioctl(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) == 0 ? 0 : errno;
}

/* Check that a call's result (0 or errno) is exactly `want`. */
static inline int kt_expect(const char *name, int got, int want)
{
	if (got == want) {
		kt_pass(name);
		return 1;
	}
	kt_fail(name, "got %s, want %s", kt_errname(got), kt_errname(want));
	return 0;
}

static inline int kt_true(const char *name, int cond, const char *what)
{
	if (cond) {
		kt_pass(name);
		return 1;
	}
	kt_fail(name, "%s", what);
	return 0;
}

#endif /* KMOD_TEST_H */
