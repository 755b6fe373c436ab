/* Internal declarations of the event files (event_file.c): the hand-written protobuf encoders
 * the writer uses and the monitored session's summaries reuse, and the graph with its placement. */
#ifndef WEFT_EVENT_INTERNAL_H
#define WEFT_EVENT_INTERNAL_H

#include <glib.h>

#include "weft/weft.h"

/* Protobuf wire format, appended to `out`: a field's key, and whole fields of each kind. */
void weft__pb_put_tag(GByteArray *out, int field, int wire_type);
void weft__pb_put_bytes(GByteArray *out, int field, const void *data, size_t len);
void weft__pb_put_string(GByteArray *out, int field, const char *s);
void weft__pb_put_double(GByteArray *out, int field, double v);
void weft__pb_put_float(GByteArray *out, int field, float v);
void weft__pb_put_varint_field(GByteArray *out, int field, uint64_t v);

/* Appends Summary.value {tag, simple_value} (field 1 of Summary) to a Summary being built. */
void weft__summary_put_scalar(GByteArray *summary, const char *tag, float value);

/* Seconds since the Unix epoch, as Event.wall_time holds them. */
double weft__event_wall_time(void);

/* The graph's GraphDef with each node's device set to where `session` placed it (nodes it has
 * not placed keep their requested device; session may be NULL). The caller frees *out. */
weft_status_t *weft__graphdef_with_devices(const weft_graph_t *graph, weft_session_t *session,
                                           GByteArray **out);

#endif
