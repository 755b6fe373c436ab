/* tool_help.h: the --help text of the tools that parse their options with GOption (weftd,
 * weft-train, weft-conformance), laid out the way help2man reads it to make their man pages:
 * "Usage: PROG [OPTION]..." on the first line (GOption puts the program on a line of its own,
 * and in the C locale writes its ellipsis as "?"), then the summary, the options under
 * "Options:", and the description. Header-only: the tools share no library of their own. */
#ifndef WEFT_TOOL_HELP_H
#define WEFT_TOOL_HELP_H

#include <glib.h>
#include <stdio.h>
#include <string.h>

/* Prints ctx's help on stdout with usage ("weftd [OPTION]...") as its first line. ctx must have
 * been made with g_option_context_new(NULL) and g_option_context_set_help_enabled(ctx, FALSE),
 * the tool offering its own -h/--help entry. */
static inline void tool_print_help(GOptionContext *ctx, const char *usage) {
  char *text = g_option_context_get_help(ctx, TRUE, NULL);
  /* GOption's own usage lines end at the first blank line. */
  const char *rest = strstr(text, "\n\n");
  GString *out = g_string_new(NULL);
  g_string_append_printf(out, "Usage: %s\n", usage);
  g_string_append(out, rest ? rest + 1 : "\n");
  char *body = g_string_free(out, FALSE);
  char **parts = g_strsplit(body, "Application Options:", 2);
  char *joined = g_strjoinv("Options:", parts);
  fputs(joined, stdout);
  g_free(joined);
  g_strfreev(parts);
  g_free(body);
  g_free(text);
}

#endif /* WEFT_TOOL_HELP_H */
