/*
 * scaler/aws/awsprofile.h — the AWS shared config and credentials files, read as the
 * AWS SDKs read them.
 *
 * Files: AWS_CONFIG_FILE (default ~/.aws/config) and AWS_SHARED_CREDENTIALS_FILE
 * (default ~/.aws/credentials); a leading "~/" is the home directory. A file that
 * does not exist or cannot be read is treated as empty, as the SDKs do.
 *
 * Format (INI): "[section]" lines, "key = value" lines under them, lines starting
 * with '#' or ';' are comments, as is the rest of a value from a '#' or ';' that
 * follows whitespace. A line that starts with whitespace continues the property
 * above it: when that property's value is empty the line is a sub-property
 * ("parent.key" here), otherwise it is appended to the value after a newline.
 * Keys are case-insensitive (stored in lower case). In the config file a profile is
 * "[default]" or "[profile NAME]" ("[profile default]" wins over "[default]"); other
 * sections are not profiles ("[sso-session x]", "[services x]") and a bare "[NAME]"
 * is ignored. In the credentials file a profile is "[NAME]"; "[profile NAME]" is
 * ignored. A profile in both files is merged key by key, the credentials file
 * winning. A key set twice in one profile: the last one counts. A property outside a
 * section, a line without '=' and a section line without ']' are errors naming the
 * file and line.
 *
 * Profile selection: AWS_PROFILE, else AWS_DEFAULT_PROFILE, else "default".
 *
 * Ownership: nw_awsprofile_load returns a set freed with nw_awsprofile_free; strings
 * it returns are borrowed from the set.
 * Thread: load reads the environment (main, before threads); a loaded set is
 * immutable.
 */
#ifndef NW_SCALER_AWS_AWSPROFILE_H
#define NW_SCALER_AWS_AWSPROFILE_H

#include <stdbool.h>

#include "common/err.h"

typedef struct nw_awsprofile_set nw_awsprofile_set_t;

/** Read both files. NW_EPARSE naming file:line for a malformed one. */
NW_MUST_USE nw_rc_t nw_awsprofile_load(nw_awsprofile_set_t **out, nw_err_t *err);

/** Parse one file's text as the config file (is_config) or the credentials file into
 * set (created when *set is NULL); file names it in messages and in
 * nw_awsprofile_file. For tests and for nw_awsprofile_load. */
NW_MUST_USE nw_rc_t nw_awsprofile_parse(nw_awsprofile_set_t **set, const char *text,
                                        const char *file, bool is_config, nw_err_t *err);

void nw_awsprofile_free(nw_awsprofile_set_t *s);

/** The profile the environment selects; *explicit_out (may be NULL) says whether
 * AWS_PROFILE or AWS_DEFAULT_PROFILE named it. */
const char *nw_awsprofile_selected(bool *explicit_out);

/** Whether the profile exists in either file. */
bool nw_awsprofile_has(const nw_awsprofile_set_t *s, const char *profile);

/** The value of key in profile, NULL when unset. *file (may be NULL) gets the file
 * it came from. */
const char *nw_awsprofile_get(const nw_awsprofile_set_t *s, const char *profile, const char *key,
                              const char **file);

/** "<config file> or <credentials file>" as looked at, for messages. */
const char *nw_awsprofile_files(const nw_awsprofile_set_t *s);

#endif
