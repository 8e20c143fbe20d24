/* See gpu_policy.h. Runs inside a setuid program: bounded buffers, no
 * allocation, every input length checked. */
#include "gpupolicy/gpu_policy.h"

#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int set_err(char* err, size_t errlen, const char* what) {
  snprintf(err, errlen, "%s", what);
  return -1;
}

/* Copies the next blank-separated word of [*p, end) into WORD; 0 when none is left. */
static int next_word(const char** p, const char* end, char* word, size_t size, int* too_long) {
  while (*p < end && (**p == ' ' || **p == '\t')) (*p)++;
  if (*p >= end) return 0;
  size_t n = 0;
  while (*p < end && **p != ' ' && **p != '\t') {
    if (n + 1 >= size) {
      *too_long = 1;
      return 0;
    }
    word[n++] = **p;
    (*p)++;
  }
  word[n] = '\0';
  return 1;
}

static int parse_number(const char* text, unsigned long* out) {
  if (*text < '0' || *text > '9') return -1;
  char* end = NULL;
  unsigned long value = strtoul(text, &end, 10);
  if (*end != '\0' || value > 0xfffffffeUL) return -1;
  *out = value;
  return 0;
}

static int parse_who(const char* word, struct policy_who* who, char* err, size_t errlen) {
  static const struct {
    const char* prefix;
    enum policy_kind kind;
  } kinds[] = {
      {"user:", POLICY_USER}, {"uid:", POLICY_UID}, {"group:", POLICY_GROUP}, {"gid:", POLICY_GID}};
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
    size_t n = strlen(kinds[i].prefix);
    if (strncmp(word, kinds[i].prefix, n) != 0) continue;
    const char* value = word + n;
    who->kind = kinds[i].kind;
    if (*value == '\0') return set_err(err, errlen, "empty name or id after ':'");
    if (who->kind == POLICY_UID || who->kind == POLICY_GID) {
      if (parse_number(value, &who->id) != 0) return set_err(err, errlen, "id is not a number");
    } else {
      snprintf(who->name, sizeof who->name, "%s", value);
    }
    return 0;
  }
  return set_err(err, errlen, "expected user:NAME, uid:N, group:NAME or gid:N");
}

/* max_filters_per_user N: the one setting, at most once. */
static int parse_setting(const char* key, const char* p, const char* end, struct policy* out,
                         char* err, size_t errlen) {
  char word[POLICY_MAX_FIELD];
  int too_long = 0;
  unsigned long value;
  if (strcmp(key, "max_filters_per_user") != 0) {
    return set_err(err, errlen, "expected a device pattern under /dev/ or max_filters_per_user N");
  }
  if (out->max_filters_set) return set_err(err, errlen, "max_filters_per_user given twice");
  if (!next_word(&p, end, word, sizeof word, &too_long) || parse_number(word, &value) != 0 ||
      value > POLICY_MAX_FILTERS_BOUND) {
    return set_err(err, errlen, "max_filters_per_user needs a number from 0 to 4096");
  }
  if (next_word(&p, end, word, sizeof word, &too_long) || too_long) {
    return set_err(err, errlen, "max_filters_per_user takes one number");
  }
  out->max_filters_per_user = (int)value;
  out->max_filters_set = 1;
  return 0;
}

static int parse_line(const char* p, const char* end, struct policy* out, char* err,
                      size_t errlen) {
  char word[POLICY_MAX_FIELD];
  int too_long = 0;
  if (!next_word(&p, end, word, sizeof word, &too_long)) {
    return too_long ? set_err(err, errlen, "device pattern too long") : 0; /* blank line */
  }
  if (word[0] != '/') return parse_setting(word, p, end, out, err, errlen);
  if (out->count >= POLICY_MAX_RULES) return set_err(err, errlen, "too many rules");
  struct policy_rule* rule = &out->rules[out->count];
  memset(rule, 0, sizeof *rule);
  /* Only nodes under /dev/, and no ".." that could climb out of it textually. */
  if (strncmp(word, "/dev/", 5) != 0 || strstr(word, "/../") != NULL ||
      strcmp(word + strlen(word) - 3, "/..") == 0) {
    return set_err(err, errlen, "device pattern must be an absolute path under /dev/");
  }
  snprintf(rule->pattern, sizeof rule->pattern, "%s", word);
  while (next_word(&p, end, word, sizeof word, &too_long)) {
    if (rule->nwho >= POLICY_MAX_WHO) return set_err(err, errlen, "too many users and groups");
    if (parse_who(word, &rule->who[rule->nwho], err, errlen) != 0) return -1;
    rule->nwho++;
  }
  if (too_long) return set_err(err, errlen, "user or group too long");
  if (rule->nwho == 0) return set_err(err, errlen, "a rule needs at least one user or group");
  out->count++;
  return 0;
}

int policy_parse(const char* text, size_t len, struct policy* out, char* err, size_t errlen) {
  memset(out, 0, sizeof *out);
  out->max_filters_per_user = POLICY_DEFAULT_MAX_FILTERS;
  const char* p = text;
  const char* end = text + len;
  int line = 0;
  while (p < end) {
    line++;
    const char* eol = memchr(p, '\n', (size_t)(end - p));
    if (eol == NULL) eol = end;
    const char* hash = memchr(p, '#', (size_t)(eol - p));
    if (memchr(p, '\0', (size_t)(eol - p)) != NULL) {
      set_err(err, errlen, "NUL byte");
      return line;
    }
    if (parse_line(p, hash != NULL ? hash : eol, out, err, errlen) != 0) return line;
    /* A last line without a newline ends the text: eol + 1 would point two past its
     * end, which C does not let a pointer do (the comparison above would be undefined). */
    if (eol == end) break;
    p = eol + 1;
  }
  return 0;
}

static int caller_in_group(const struct policy_caller* caller, gid_t gid) {
  for (int i = 0; i < caller->ngids; i++) {
    if (caller->gids[i] == gid) return 1;
  }
  return 0;
}

static int who_matches(const struct policy_who* who, const struct policy_caller* caller) {
  gid_t gid;
  switch (who->kind) {
    case POLICY_USER: return caller->user_name != NULL && strcmp(who->name, caller->user_name) == 0;
    case POLICY_UID: return (unsigned long)caller->uid == who->id;
    case POLICY_GROUP:
      return caller->group_gid != NULL && caller->group_gid(who->name, &gid) == 0 &&
             caller_in_group(caller, gid);
    case POLICY_GID: return caller_in_group(caller, (gid_t)who->id);
  }
  return 0;
}

int policy_allows(const struct policy* policy, const char* device,
                  const struct policy_caller* caller) {
  for (int r = 0; r < policy->count; r++) {
    const struct policy_rule* rule = &policy->rules[r];
    if (fnmatch(rule->pattern, device, FNM_PATHNAME) != 0) continue;
    for (int w = 0; w < rule->nwho; w++) {
      if (who_matches(&rule->who[w], caller)) return 1;
    }
  }
  return 0;
}
