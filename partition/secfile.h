/*
 * secfile.h - the sectioned container shared by layout.bin and the shards
 * (internal to the partition module; the format is described in partition.h).
 */
#ifndef ROTOR_SECFILE_H
#define ROTOR_SECFILE_H

#include "partition/partition.h"

#include <stdio.h>
#define XXH_STATIC_LINKING_ONLY /* XXH3_state_t by value */
#include <xxhash.h>

/* A plan file written whole, its size and XXH3 computed on the way
 * (plan.json records both for every file of the plan). */
typedef struct rt_hashed_file {
    FILE *fp;
    const char *path;
    XXH3_state_t st;
    uint64_t bytes;
} rt_hashed_file;

int rt_hashed_create(rt_hashed_file *f, const char *path, rt_error *err);
int rt_hashed_put(rt_hashed_file *f, const void *p, size_t len, rt_error *err);
/* Close the file; when rc == 0 and the close worked, *bytes and *check
 * describe it.  Returns rc, or -1 when closing failed. */
int rt_hashed_close(rt_hashed_file *f, int rc, uint64_t *bytes, uint64_t *check, rt_error *err);

/* One section to write: `bytes` bytes at `data`. */
typedef struct rt_secdata {
    uint32_t id;
    const void *data;
    uint64_t bytes;
} rt_secdata;

/* Write a complete sectioned file at `path` (the caller writes into a
 * temporary plan directory, so no per-file rename is needed).  `hdr` has
 * every field but n_sections and header_check filled in.  On success the
 * XXH3 of the whole file is returned in *file_check and its size in *file_bytes. */
int rt_secfile_write(const char *path, const rt_file_header *hdr, const rt_secdata *secs,
                     uint32_t n, uint64_t *file_check, uint64_t *file_bytes, rt_error *err);

/* A sectioned file in memory (mapped, or read into an anonymous mapping)
 * and verified. */
typedef struct rt_secfile {
    void *map;
    size_t len;
    const rt_file_header *hdr;
    const rt_section_entry *sec;
} rt_secfile;

/* Map `path` (`mapped`: a truncation under the mapping raises SIGBUS) or
 * read it into memory (a file cut while it is read is "truncated while
 * being read"), then check magic, version, kind, header checksum, that every
 * section lies inside the file (else "truncated") and every section checksum. */
int rt_secfile_open(const char *path, uint32_t kind, int mapped, rt_secfile *f, rt_error *err);
void rt_secfile_close(rt_secfile *f);
/* Section `id` (NULL with *bytes = 0 when absent). */
const void *rt_secfile_find(const rt_secfile *f, uint32_t id, uint64_t *bytes);

#endif
