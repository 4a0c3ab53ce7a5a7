/*
 * json.h - the one reader of JSON documents: plan.json, model.json, a
 * checkpoint's manifest.json, metrics files, gen mf's FILE.truth.json.
 * Every command that reads one goes through here, so every one of them
 * says what was wrong the same way and takes the same files.
 *
 * The text is read as every text file rotor wrote is (rt_text_load_own:
 * a FIFO or device in its place is refused at once): "-" is standard
 * input, binary bytes are refused at FILE:LINE, a UTF-8 byte order mark
 * (an editor's) is skipped, and lines end at "\n", "\r\n" or a lone "\r",
 * so the LINE of an error is the line an editor shows.  Then jansson
 * parses it, with two rules of its own:
 *   - the document is an object or an array (a bare number is no file of
 *     rotor's);
 *   - a key repeated in one object is refused: jansson would keep the last
 *     one silently, and a hand-edited file meant one of them.
 */
#ifndef ROTOR_GROUND_JSON_H
#define ROTOR_GROUND_JSON_H

#include "ground/ground.h"

#include <jansson.h>

/* The document in file `path` ("-": standard input), or NULL with err set
 * (exit code 2): "PATH:LINE:COLUMN: what jansson found" for bad JSON,
 * "PATH: cannot open: REASON", "PATH: read failed: Is a directory", ...
 * err may be NULL (a probe that only asks "is this ours?"). */
json_t *rt_json_load(const char *path, rt_error *err);
/* The same for the rest of an open stream, read as `path`. */
json_t *rt_json_loadf(FILE *fp, const char *path, rt_error *err);
/* The same for text[0..len), the bytes of `path` (no line-end unification:
 * rt_json_load's callers get it from rt_text_load). */
json_t *rt_json_parse(const char *text, size_t len, const char *path, rt_error *err);

/* A JSON string of outside bytes (a path, a command line): JSON strings are
 * UTF-8, and jansson's json_string gives NULL for anything else (a Latin-1
 * file name), which json_pack and json_object_set_new then drop or fail on
 * silently.  Each byte that starts no UTF-8 character becomes U+FFFD, so
 * the text stays readable; NULL only when out of memory. */
json_t *rt_json_text(const char *s);

#endif
