/*
 * unpriv.h -- run a check as one of the fixture's unprivileged users.
 *
 * tests/fixtures/users.sh (a ctest fixture, tests/unit/perm_tests.cmake) creates
 * the users and names them in the environment:
 *   FLASH_TEST_USER_A, FLASH_TEST_USER_B   members of FLASH_TEST_GROUP
 *   FLASH_TEST_USER_C                      not a member
 * The permission tests need them and root to start from: a missing user or a
 * start as anyone but root fails the test, it never skips.
 */
#ifndef FLASH_TEST_UNPRIV_H
#define FLASH_TEST_UNPRIV_H

#include <sys/types.h>

/* The fixture's users and group, from the environment (fails the test when
 * one is unset or unknown to the system, or when we are not root). */
enum { T_USER_A, T_USER_B, T_USER_C };
uid_t t_user_uid(int which);
gid_t t_test_gid(void);

/*
 * Fork; the child takes user @p which's identity exactly as a login would
 * (its supplementary groups by initgroups(3), then its gid, then its uid;
 * it checks it cannot regain root) and _exit()s with fn(arg).  Returns the
 * child's exit status (128 + signal if it was killed).  A child that could
 * not become the user exits 90 and says why on stderr.  Child code never
 * calls cmocka: it reports by its status only.
 */
int t_run_as(int which, int (*fn)(void *), void *arg);

#endif /* FLASH_TEST_UNPRIV_H */
