/*
 * test_api_tokens.c -- one-time tokens: issue, redeem once (GETDEL), expiry,
 * goods and user binding, several live tokens, a full table, and the token
 * step of the order path (checked first; a rejection on the order's merits
 * burns its token, a refusal for the engine's capacity -- FLASH_EBUSY,
 * FLASH_EFULL -- leaves it live for the retry).
 */
#include "helpers.h"
#include "fs.h"   /* fs_siphash24_u64, fs_token_permute, fs_mix64 */

#include <stdlib.h>
#include <string.h>

#define SEC 1000000000LL

static flash_t *setup(char *name, size_t len, uint32_t flags)
{
	flash_t *h = t_seg_new(NULL, name, len);

	assert_int_equal(t_activity(h, 1, 4, 1, FLASH_SCOPE_ACTIVITY, flags), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 10, 100, 1), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 11, 100, 1), FLASH_OK);
	return h;
}

static void test_token_redeems_once_then_ebad_token(void **state)
{
	char name[64];
	flash_t *h = setup(name, sizeof name, 0);
	uint64_t tok = 0;

	assert_int_equal(flash_token_issue(h, 1, 10, 5, 60000, &tok), FLASH_OK);
	assert_int_not_equal(tok, 0);
	assert_int_equal(flash_token_redeem(h, 1, 10, 5, tok), FLASH_OK);
	assert_int_equal(flash_token_redeem(h, 1, 10, 5, tok), FLASH_EBAD_TOKEN);
	assert_int_equal(flash_token_redeem(h, 1, 10, 5, tok), FLASH_EBAD_TOKEN);
}

static void test_token_for_other_goods_or_user_gives_ebad_token_and_stays_live(void **state)
{
	char name[64];
	flash_t *h = setup(name, sizeof name, 0);
	uint64_t tok = 0;

	assert_int_equal(t_activity(h, 2, 1, 1, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 2, 10, 100, 1), FLASH_OK);
	assert_int_equal(flash_token_issue(h, 1, 10, 5, 60000, &tok), FLASH_OK);
	assert_int_equal(flash_token_redeem(h, 1, 11, 5, tok), FLASH_EBAD_TOKEN);
	assert_int_equal(flash_token_redeem(h, 2, 10, 5, tok), FLASH_EBAD_TOKEN);
	assert_int_equal(flash_token_redeem(h, 1, 10, 6, tok), FLASH_EBAD_TOKEN);
	assert_int_equal(flash_token_redeem(h, 1, 10, 5, tok + 1), FLASH_EBAD_TOKEN);
	assert_int_equal(flash_token_redeem(h, 1, 10, 5, tok ^ (1ull << 63)), FLASH_EBAD_TOKEN);
	/* the right owner can still use it: wrong guesses burn nothing */
	assert_int_equal(flash_token_redeem(h, 1, 10, 5, tok), FLASH_OK);
}

static void test_unknown_token_gives_ebad_token(void **state)
{
	char name[64];
	flash_t *h = setup(name, sizeof name, 0);

	assert_int_equal(flash_token_redeem(h, 1, 10, 5, 1), FLASH_EBAD_TOKEN);
	assert_int_equal(flash_token_redeem(h, 1, 10, 5, UINT64_MAX), FLASH_EBAD_TOKEN);
	assert_int_equal(flash_token_redeem(h, 1, 10, 5, 0), FLASH_EBAD_TOKEN);
}

static void test_token_expires_after_ttl_ms(void **state)
{
	char name[64];
	flash_t *h = setup(name, sizeof name, 0);
	uint64_t tok = 0, tok2 = 0;

	assert_int_equal(flash_token_issue(h, 1, 10, 5, 30, &tok), FLASH_OK);
	assert_int_equal(flash_token_issue(h, 1, 10, 5, 60000, &tok2), FLASH_OK);
	t_sleep_ms(80);
	assert_int_equal(flash_token_redeem(h, 1, 10, 5, tok), FLASH_EBAD_TOKEN);
	assert_int_equal(flash_token_redeem(h, 1, 10, 5, tok2), FLASH_OK);
}

static void test_several_live_tokens_per_user_each_redeem_once(void **state)
{
	char name[64];
	flash_t *h = setup(name, sizeof name, 0);
	uint64_t tok[5];

	for (int i = 0; i < 5; i++) {
		assert_int_equal(flash_token_issue(h, 1, 10, 5, 60000, &tok[i]), FLASH_OK);
		assert_int_not_equal(tok[i], 0);
		for (int j = 0; j < i; j++)
			assert_int_not_equal(tok[i], tok[j]);
	}
	/* redeem in another order than issued */
	for (int i = 4; i >= 0; i -= 2)
		assert_int_equal(flash_token_redeem(h, 1, 10, 5, tok[i]), FLASH_OK);
	for (int i = 1; i < 5; i += 2)
		assert_int_equal(flash_token_redeem(h, 1, 10, 5, tok[i]), FLASH_OK);
	for (int i = 0; i < 5; i++)
		assert_int_equal(flash_token_redeem(h, 1, 10, 5, tok[i]), FLASH_EBAD_TOKEN);
}

static void test_tokens_are_never_issued_twice(void **state)
{
	char name[64];
	struct flash_seg_opts o;
	flash_t *h;
	uint64_t seen[256];
	int n = 0;

	t_opts_small(&o);
	o.max_tokens = 8;
	h = t_seg_new(&o, name, sizeof name);
	assert_int_equal(t_activity(h, 1, 1, 1, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 10, 100, 1), FLASH_OK);
	/* issue and redeem through a small table many times over: entries are
	 * reused, numbers are not */
	for (int round = 0; round < 32; round++)
		for (int i = 0; i < 8; i++) {
			uint64_t t = 0;

			assert_int_equal(flash_token_issue(h, 1, 10, (uint64_t)i + 1, 60000, &t), FLASH_OK);
			for (int j = 0; j < n; j++)
				assert_int_not_equal(seen[j], t);
			seen[n++] = t;
			assert_int_equal(flash_token_redeem(h, 1, 10, (uint64_t)i + 1, t), FLASH_OK);
		}
	assert_int_equal(n, 256);
}

static void test_token_issue_rejects_bad_arguments(void **state)
{
	char name[64];
	flash_t *h = setup(name, sizeof name, 0);
	struct t_snap before;
	uint64_t tok = 0;

	t_snap_take(h, &before);
	assert_int_equal(flash_token_issue(h, 1, 10, 5, 1000, NULL), FLASH_EINVAL);
	assert_int_equal(flash_token_issue(NULL, 1, 10, 5, 1000, &tok), FLASH_EINVAL);
	assert_int_equal(flash_token_issue(h, 1, 10, 0, 1000, &tok), FLASH_EINVAL);
	assert_int_equal(flash_token_issue(h, 1, 10, 5, 0, &tok), FLASH_EINVAL);
	assert_int_equal(flash_token_issue(h, 2, 10, 5, 1000, &tok), FLASH_ENOT_FOUND);
	assert_int_equal(flash_token_issue(h, 1, 12, 5, 1000, &tok), FLASH_ENOT_FOUND);
	assert_int_equal(flash_token_redeem(NULL, 1, 10, 5, 1), FLASH_EINVAL);
	T_ASSERT_UNCHANGED(h, &before, 0);
	assert_int_equal(tok, 0);
}

static void test_token_table_full_gives_efull_until_a_token_is_used_or_expires(void **state)
{
	char name[64];
	struct flash_seg_opts o;
	flash_t *h;
	struct t_snap before;
	uint64_t tok[4], extra = 0, short_tok = 0;

	t_opts_small(&o);
	o.max_tokens = 4;
	h = t_seg_new(&o, name, sizeof name);
	assert_int_equal(t_activity(h, 1, 1, 1, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 10, 100, 1), FLASH_OK);
	for (int i = 0; i < 4; i++)
		assert_int_equal(flash_token_issue(h, 1, 10, (uint64_t)i + 1, 600000, &tok[i]), FLASH_OK);
	t_snap_take(h, &before);
	assert_int_equal(before.st.tokens, 4);
	assert_int_equal(before.st.tokens_cap, 4);
	assert_int_equal(flash_token_issue(h, 1, 10, 9, 60000, &extra), FLASH_EFULL);
	assert_int_equal(flash_token_issue(h, 1, 10, 1, 60000, &extra), FLASH_EFULL);
	T_ASSERT_UNCHANGED(h, &before, 0);
	assert_int_equal(extra, 0);
	/* a redeemed token's entry is reclaimed by the next issue */
	assert_int_equal(flash_token_redeem(h, 1, 10, 1, tok[0]), FLASH_OK);
	assert_int_equal(flash_token_issue(h, 1, 10, 9, 30, &short_tok), FLASH_OK);
	/* full again; once the short-lived token has expired its entry is
	 * reclaimed too (its lifetime is over whatever the scheduling) */
	t_sleep_ms(80);
	assert_int_equal(flash_token_issue(h, 1, 10, 10, 60000, &extra), FLASH_OK);
	assert_int_equal(flash_token_redeem(h, 1, 10, 9, short_tok), FLASH_EBAD_TOKEN);
	assert_int_equal(flash_token_issue(h, 1, 10, 11, 60000, &extra), FLASH_EFULL);
	for (int i = 1; i < 4; i++)
		assert_int_equal(flash_token_redeem(h, 1, 10, (uint64_t)i + 1, tok[i]), FLASH_OK);
}

static void test_order_with_token_required_redeems_it_once(void **state)
{
	char name[64];
	flash_t *h = setup(name, sizeof name, FLASH_ACT_TOKEN_REQUIRED);
	struct t_snap before;
	struct flash_stats st;
	uint64_t tok = 0;

	t_snap_take(h, &before);
	assert_int_equal(t_order(h, 1, 10, 5, 1, 0, 0, NULL), FLASH_EBAD_TOKEN);
	assert_int_equal(t_order(h, 1, 10, 5, 1, 12345, 0, NULL), FLASH_EBAD_TOKEN);
	T_ASSERT_UNCHANGED(h, &before, 0);
	assert_int_equal(flash_stats_get(h, &st), FLASH_OK);
	assert_int_equal(st.token_rejects, before.st.token_rejects + 2);

	assert_int_equal(flash_token_issue(h, 1, 10, 5, 60000, &tok), FLASH_OK);
	assert_int_equal(t_order(h, 1, 10, 5, 1, tok, 0, NULL), FLASH_OK);
	t_snap_take(h, &before);
	assert_int_equal(t_order(h, 1, 10, 5, 1, tok, 0, NULL), FLASH_EBAD_TOKEN);
	T_ASSERT_UNCHANGED(h, &before, 0);
	assert_int_equal(flash_token_redeem(h, 1, 10, 5, tok), FLASH_EBAD_TOKEN);
	assert_int_equal(t_available(h, 1, 10), 99);
}

static void test_order_token_for_other_sku_or_user_is_rejected(void **state)
{
	char name[64];
	flash_t *h = setup(name, sizeof name, FLASH_ACT_TOKEN_REQUIRED);
	struct t_snap before;
	uint64_t tok = 0;

	assert_int_equal(flash_token_issue(h, 1, 10, 5, 60000, &tok), FLASH_OK);
	t_snap_take(h, &before);
	assert_int_equal(t_order(h, 1, 11, 5, 1, tok, 0, NULL), FLASH_EBAD_TOKEN);
	assert_int_equal(t_order(h, 1, 10, 6, 1, tok, 0, NULL), FLASH_EBAD_TOKEN);
	T_ASSERT_UNCHANGED(h, &before, 0);
	assert_int_equal(t_order(h, 1, 10, 5, 1, tok, 0, NULL), FLASH_OK);
}

static void test_order_expired_token_is_rejected(void **state)
{
	char name[64];
	flash_t *h = setup(name, sizeof name, FLASH_ACT_TOKEN_REQUIRED);
	struct t_snap before;
	uint64_t tok = 0;

	assert_int_equal(flash_token_issue(h, 1, 10, 5, 20, &tok), FLASH_OK);
	t_sleep_ms(70);
	t_snap_take(h, &before);
	assert_int_equal(t_order(h, 1, 10, 5, 1, tok, 0, NULL), FLASH_EBAD_TOKEN);
	T_ASSERT_UNCHANGED(h, &before, T_IGN_TOKENS);
}

static void test_token_is_checked_before_window_and_burned_by_a_rejected_order(void **state)
{
	char name[64];
	flash_t *h = t_seg_new(NULL, name, sizeof name);
	struct flash_activity a;
	struct t_snap before;
	int64_t now = t_now_ns();
	uint64_t tok = 0;

	memset(&a, 0, sizeof a);
	a.id = 1;
	a.limit_per_user = 1;
	a.max_qty = 1;
	a.flags = FLASH_ACT_TOKEN_REQUIRED;
	a.start_ns = now + 3600 * SEC;
	a.end_ns = now + 7200 * SEC;
	assert_int_equal(flash_activity_add(h, &a), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 10, 5, 1), FLASH_OK);
	/* not started AND no token: the token answers first */
	assert_int_equal(t_order(h, 1, 10, 5, 1, 0, 0, NULL), FLASH_EBAD_TOKEN);
	assert_int_equal(t_order(h, 1, 10, 5, 1, 777, 0, NULL), FLASH_EBAD_TOKEN);
	/* a good token passes step 1 and meets the window, which burns it */
	assert_int_equal(flash_token_issue(h, 1, 10, 5, 60000, &tok), FLASH_OK);
	t_snap_take(h, &before);
	assert_int_equal(t_order(h, 1, 10, 5, 1, tok, 0, NULL), FLASH_ENOT_STARTED);
	T_ASSERT_UNCHANGED(h, &before, T_IGN_TOKENS);
	assert_int_equal(flash_token_redeem(h, 1, 10, 5, tok), FLASH_EBAD_TOKEN);
}

static void test_token_burned_by_limit_or_sold_out(void **state)
{
	char name[64];
	flash_t *h = t_seg_new(NULL, name, sizeof name);
	uint64_t tok = 0;

	assert_int_equal(t_activity(h, 1, 1, 2, FLASH_SCOPE_ACTIVITY, FLASH_ACT_TOKEN_REQUIRED), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 10, 1, 1), FLASH_OK);
	assert_int_equal(flash_token_issue(h, 1, 10, 5, 60000, &tok), FLASH_OK);
	assert_int_equal(t_order(h, 1, 10, 5, 2, tok, 0, NULL), FLASH_ESOLD_OUT);
	assert_int_equal(flash_token_redeem(h, 1, 10, 5, tok), FLASH_EBAD_TOKEN);
	assert_int_equal(flash_token_issue(h, 1, 10, 5, 60000, &tok), FLASH_OK);
	assert_int_equal(t_order(h, 1, 10, 5, 1, tok, 0, NULL), FLASH_OK);
	assert_int_equal(flash_token_issue(h, 1, 10, 5, 60000, &tok), FLASH_OK);
	assert_int_equal(t_order(h, 1, 10, 5, 1, tok, 0, NULL), FLASH_ELIMIT);
	assert_int_equal(flash_token_redeem(h, 1, 10, 5, tok), FLASH_EBAD_TOKEN);
}

static void test_order_refused_with_ebusy_ring_full_leaves_token_live(void **state)
{
	char name[64];
	struct flash_seg_opts o;
	flash_t *h;
	uint64_t tok = 0;
	int rc = FLASH_OK, n = 0;

	t_opts_small(&o);
	o.ring_records = 16;
	h = t_seg_new(&o, name, sizeof name);
	assert_int_equal(t_activity(h, 1, 1, 1, FLASH_SCOPE_ACTIVITY, FLASH_ACT_TOKEN_REQUIRED), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 10, 100, 1), FLASH_OK);
	/* nothing drains the ring: fill it with orders of other users */
	while (rc == FLASH_OK) {
		uint64_t t = 0;

		assert_int_equal(flash_token_issue(h, 1, 10, 1000 + (uint64_t)n, 60000, &t), FLASH_OK);
		rc = t_order(h, 1, 10, 1000 + (uint64_t)n, 1, t, 0, NULL);
		n++;
		assert_true(n < 64);
	}
	assert_int_equal(rc, FLASH_EBUSY);
	assert_int_equal(flash_token_issue(h, 1, 10, 5, 60000, &tok), FLASH_OK);
	assert_int_equal(t_order(h, 1, 10, 5, 1, tok, 0, NULL), FLASH_EBUSY);
	assert_int_equal(t_order(h, 1, 10, 5, 1, tok, 0, NULL), FLASH_EBUSY);
	/* the retry once the ring drains uses the same token */
	{
		struct t_recs recs = { 0 };

		assert_int_equal(t_recs_drain(h, &recs), FLASH_OK);
		t_recs_free(&recs);
	}
	assert_int_equal(t_order(h, 1, 10, 5, 1, tok, 0, NULL), FLASH_OK);
	assert_int_equal(flash_token_redeem(h, 1, 10, 5, tok), FLASH_EBAD_TOKEN);
}

static void test_order_refused_with_efull_user_table_leaves_token_live(void **state)
{
	char name[64];
	struct flash_seg_opts o;
	struct flash_stats st;
	flash_t *h;
	uint64_t tok = 0, t1 = 0;

	t_opts_small(&o);
	o.max_users = 1;
	h = t_seg_new(&o, name, sizeof name);
	assert_int_equal(t_activity(h, 1, 1, 1, FLASH_SCOPE_ACTIVITY, FLASH_ACT_TOKEN_REQUIRED), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 10, 100, 1), FLASH_OK);
	assert_int_equal(flash_token_issue(h, 1, 10, 1, 60000, &t1), FLASH_OK);
	assert_int_equal(t_order(h, 1, 10, 1, 1, t1, 0, NULL), FLASH_OK);   /* fills the user table */
	assert_int_equal(flash_token_issue(h, 1, 10, 2, 60000, &tok), FLASH_OK);
	assert_int_equal(flash_stats_get(h, &st), FLASH_OK);
	assert_int_equal(st.tokens, 1);
	/* the token step passes, the per-user table is full: refused, not judged */
	assert_int_equal(t_order(h, 1, 10, 2, 1, tok, 0, NULL), FLASH_EFULL);
	assert_int_equal(flash_stats_get(h, &st), FLASH_OK);
	print_message("after EFULL: %u live tokens\n", st.tokens);
	assert_int_equal(st.tokens, 1);
	assert_int_equal(t_order(h, 1, 10, 2, 1, tok, 0, NULL), FLASH_EFULL);
	assert_int_equal(flash_token_redeem(h, 1, 10, 2, tok), FLASH_OK);
	assert_int_equal(flash_stats_get(h, &st), FLASH_OK);
	assert_int_equal(st.tokens, 0);
}

/* ---- token numbers: unguessable ----------------------------------------- */

/* x * inv == 1 mod 2^64 (Newton's iteration; m odd). */
static uint64_t inv64(uint64_t m)
{
	uint64_t x = m;

	for (int i = 0; i < 6; i++)
		x *= 2 - m * x;
	return x;
}

/* The inverse of x ^= x >> s. */
static uint64_t unxorshift(uint64_t x, unsigned s)
{
	uint64_t y = x;

	for (unsigned k = s; k < 64; k += s)
		y ^= x >> k;
	return y;
}

/* The inverse of splitmix64's finalizer: the public half of the old token
 * numbers, fs_mix64((slot << 48 | sequence) ^ secret). */
static uint64_t unmix64(uint64_t x)
{
	x = unxorshift(x, 31);
	x *= inv64(0x94d049bb133111ebull);
	x = unxorshift(x, 27);
	x *= inv64(0xbf58476d1ce4e5b9ull);
	return unxorshift(x, 30);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

#define GUESS_TOKENS 2048

/*
 * With the old numbers, the secret cancels between two tokens of one handle:
 * unmix(t1) ^ unmix(t2) = seq1 ^ seq2, and the next token is
 * mix(unmix(t) ^ (seq ^ (seq + k))) for a small k -- about a hundred
 * candidates, whatever the secret.  Unguessable numbers show neither.
 */
static void test_token_numbers_are_unguessable_unique_and_redeemable(void **state)
{
	char name[64];
	struct flash_seg_opts o;
	flash_t *h;
	static uint64_t tok[GUESS_TOKENS], sorted[GUESS_TOKENS];
	uint64_t cand[512];
	unsigned ncand = 0, small_xor = 0, guessed = 0;

	for (uint64_t r = 1; r < (1ull << 62); r = r * 3 + 7)
		assert_int_equal(unmix64(fs_mix64(r)), r);   /* the inverse is right */
	/* candidate differences seq ^ (seq + k), k = 1..8 */
	for (uint64_t a = 0; a < (1u << 16); a++)
		for (uint64_t k = 1; k <= 8; k++) {
			uint64_t d = a ^ (a + k);
			unsigned i;

			for (i = 0; i < ncand && cand[i] != d; i++)
				;
			if (i == ncand) {
				assert_true(ncand < 512);
				cand[ncand++] = d;
			}
		}

	t_opts_small(&o);
	o.max_tokens = 64;
	h = t_seg_new(&o, name, sizeof name);
	assert_int_equal(t_activity(h, 1, 1, 1, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 10, 100, 1), FLASH_OK);
	for (int i = 0; i < GUESS_TOKENS; i++) {
		assert_int_equal(flash_token_issue(h, 1, 10, 5, 60000, &tok[i]), FLASH_OK);
		assert_int_not_equal(tok[i], 0);
		/* each one redeems, once (the table is reused many times over) */
		assert_int_equal(flash_token_redeem(h, 1, 10, 5, tok[i]), FLASH_OK);
		assert_int_equal(flash_token_redeem(h, 1, 10, 5, tok[i]), FLASH_EBAD_TOKEN);
	}
	for (int i = 0; i + 1 < GUESS_TOKENS; i++) {
		uint64_t u = unmix64(tok[i]);

		small_xor += (u ^ unmix64(tok[i + 1])) < (1ull << 20);
		for (unsigned c = 0; c < ncand; c++)
			if (fs_mix64(u ^ cand[c]) == tok[i + 1]) {
				guessed++;
				break;
			}
	}
	print_message("%u candidates: next token guessed %u of %d times; "
	              "sequence visible through the inverse mix %u times\n",
	              ncand, guessed, GUESS_TOKENS - 1, small_xor);
	assert_int_equal(guessed, 0);
	assert_int_equal(small_xor, 0);
	memcpy(sorted, tok, sizeof tok);
	qsort(sorted, GUESS_TOKENS, sizeof sorted[0], cmp_u64);
	for (int i = 0; i + 1 < GUESS_TOKENS; i++)
		assert_int_not_equal(sorted[i], sorted[i + 1]);
}

/* The round function is SipHash-2-4: the reference vector (key 00..0f,
 * message 00..07) and one computed with libsodium's crypto_shorthash. */
static void test_token_round_function_is_siphash24(void **state)
{
	const uint64_t k1[2] = { 0x0706050403020100ull, 0x0f0e0d0c0b0a0908ull };
	const uint64_t k2[2] = { 0xdeadbeefull, 0x1234ull };

	assert_int_equal(fs_siphash24_u64(k1, 0x0706050403020100ull), 0x93f5f5799a932462ull);
	assert_int_equal(fs_siphash24_u64(k2, 0x0123456789abcdefull), 0xfcc5c9b2f2defa72ull);
	/* and the permutation depends on the key */
	assert_int_not_equal(fs_token_permute(k1, 1), fs_token_permute(k2, 1));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_teardown(fn, t_teardown)
		T(test_token_redeems_once_then_ebad_token),
		T(test_token_for_other_goods_or_user_gives_ebad_token_and_stays_live),
		T(test_unknown_token_gives_ebad_token),
		T(test_token_expires_after_ttl_ms),
		T(test_several_live_tokens_per_user_each_redeem_once),
		T(test_tokens_are_never_issued_twice),
		T(test_token_issue_rejects_bad_arguments),
		T(test_token_table_full_gives_efull_until_a_token_is_used_or_expires),
		T(test_order_with_token_required_redeems_it_once),
		T(test_order_token_for_other_sku_or_user_is_rejected),
		T(test_order_expired_token_is_rejected),
		T(test_token_is_checked_before_window_and_burned_by_a_rejected_order),
		T(test_token_burned_by_limit_or_sold_out),
		T(test_order_refused_with_ebusy_ring_full_leaves_token_live),
		T(test_order_refused_with_efull_user_table_leaves_token_live),
		T(test_token_numbers_are_unguessable_unique_and_redeemable),
		T(test_token_round_function_is_siphash24),
#undef T
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
