/*
 * fuzz.h - shared pieces of rotor's libFuzzer targets (tests/fuzz/fuzz_*.c).
 *
 * Every parser of outside bytes reads files by path, so a target writes the
 * fuzzer's bytes into a scratch directory (tmpfs when there is one) and calls
 * the parser on that path, exactly as the commands do.  Parsers guarded by
 * checksums get their checksums fixed up first, so the fuzzer reaches the
 * structural checks behind them instead of stopping at the first hash.
 *
 * Built two ways (tests/fuzz/CMakeLists.txt): with clang's -fsanitize=fuzzer
 * (the `fuzz` ctest label), and with any compiler plus driver.c, which runs
 * the committed seed corpus and every regression input once (label unit).
 */
#ifndef ROTOR_FUZZ_H
#define ROTOR_FUZZ_H

#include "ground/ground.h"

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The scratch directory of this process (created on first use, removed at exit). */
const char *fuzz_dir(void);
/* Write bytes to fuzz_dir()/name; returns the path (static buffer per name slot). */
const char *fuzz_write(const char *name, const void *data, size_t size);
/* Split data at the first "\n====\n": the part before, and the part after
 * (after = NULL when there is no separator). */
void fuzz_split(const uint8_t *data, size_t size, size_t *before, const uint8_t **after,
                size_t *after_len);
/* The fuzzer's bytes, read front to back by targets that parse a stream. */
typedef struct fuzz_input {
    const uint8_t *p;
    size_t left;
} fuzz_input;
/* Take n bytes into out (NULL: skip them); -1 when fewer are left. */
int fuzz_take(fuzz_input *in, void *out, size_t n);

/* Quietly run parsers[data[0] % n] on the bytes after the first. */
void fuzz_pick(const uint8_t *data, size_t size, void (*const *parsers)(fuzz_input *), size_t n);

/* Quiet logging; call from each target's first input. */
void fuzz_quiet(void);
/* A small valid MF plan (12 x 8 ratings, 2 nodes x 1 thread) at
 * fuzz_dir()/NAME, made once; returns its path. */
const char *fuzz_seed_plan(const char *name);
/* Write the fuzzer's bytes as the sectioned file (layout.bin, shard)
 * fuzz_dir()/NAME, with the checksums made right for them (every section
 * that lies inside, then the header) so the fuzzer reaches the structural
 * checks behind them; returns the checksum of the whole file as written. */
uint64_t fuzz_write_secfile(const char *name, const uint8_t *data, size_t size);
/* Open the plan at dir as rotor train does, then every shard and id list. */
void fuzz_use_plan(const char *dir);

#endif
