/* Bounded protobuf unpacking (protobuf_internal.h): a walk over the wire format that measures how
 * deep messages nest before protobuf-c's unpack, which recurses once per level, ever sees them.
 * A 45 KB GraphDef whose AttrValue.func -> NameAttrList.attr -> AttrValue chain nests 3,000 deep
 * overflowed weftd's stack; every parser of untrusted protobuf bytes now comes through here.
 * The same walk refuses `string` fields holding a NUL byte: protobuf-c hands them over as C
 * strings cut at the NUL, so "a\0b" and "a" would name the same node, device or session. */
#include "protobuf_internal.h"

#include <glib.h>
#include <string.h>

/* How many field names of the path to the offending field the message shows. */
#define PATH_SHOWN 8

typedef struct {
  const uint8_t *start;
  int max_depth;
  const char *path[PATH_SHOWN]; /* path[i]: the field of the level-(i+1) message being walked */
  size_t fail_at;
  int fail_level;
  bool fail_nul; /* the walk stopped at a string field holding a NUL byte, not at the depth */
} walk_t;

bool weft__pb_read_varint(const uint8_t **p, const uint8_t *end, int max_bytes,
                          uint64_t *out) {
  uint64_t v = 0;
  for (int i = 0; i < max_bytes && *p < end; i++) {
    uint8_t b = *(*p)++;
    v |= (uint64_t)(b & 0x7f) << (7 * i);
    if (!(b & 0x80)) {
      *out = v;
      return true;
    }
  }
  return false;
}

/* Walks one message of type desc at nesting level `level` over [p, end). Returns false as soon as
 * a message field would open level max_depth + 1 (w says where), so the recursion never goes
 * deeper than max_depth. Framing protobuf-c would refuse ends the walk of this message only: its
 * scan of the message fails before it recurses into any field of it, while the parent's framing
 * is sound, so the parent's remaining fields are still walked. The framing rules follow
 * protobuf-c 1.4 (tags of at most 5 bytes and never field 0, varints of at most 10 bytes, no
 * groups), and lengths are checked against the bytes left before anything is skipped. */
static bool walk(walk_t *w, const ProtobufCMessageDescriptor *desc, const uint8_t *p,
                 const uint8_t *end, int level) {
  while (p < end) {
    const uint8_t *field_start = p;
    uint64_t tag = 0, v = 0;
    if ((*p & 0xf8) == 0 || !weft__pb_read_varint(&p, end, 5, &tag)) return true;
    switch (tag & 7) {
      case 0: /* varint */
        if (!weft__pb_read_varint(&p, end, 10, &v)) return true;
        break;
      case 1: /* 64-bit */
        if (end - p < 8) return true;
        p += 8;
        break;
      case 5: /* 32-bit */
        if (end - p < 4) return true;
        p += 4;
        break;
      case 2: { /* length-delimited: a message only if desc says this field is one */
        uint64_t n = 0;
        if (!weft__pb_read_varint(&p, end, 10, &n) || n > (uint64_t)(end - p)) return true;
        const ProtobufCFieldDescriptor *f =
            protobuf_c_message_descriptor_get_field(desc, (unsigned)(uint32_t)(tag >> 3));
        if (f != NULL && f->type == PROTOBUF_C_TYPE_STRING && memchr(p, 0, n) != NULL) {
          if (level <= PATH_SHOWN) w->path[level - 1] = f->name;
          w->fail_at = (size_t)(field_start - w->start);
          w->fail_level = level;
          w->fail_nul = true;
          return false;
        }
        if (f != NULL && f->type == PROTOBUF_C_TYPE_MESSAGE) {
          if (level <= PATH_SHOWN) w->path[level - 1] = f->name;
          if (level >= w->max_depth) {
            w->fail_at = (size_t)(field_start - w->start);
            w->fail_level = level;
            return false;
          }
          if (!walk(w, f->descriptor, p, p + n, level + 1)) return false;
        }
        p += n;
        break;
      }
      default: /* groups and undefined wire types: protobuf-c refuses them */
        return true;
    }
  }
  return true;
}

weft_status_t *weft__pb_check_depth(const ProtobufCMessageDescriptor *desc, const uint8_t *data,
                                    size_t len, int max_depth, const char *what) {
  if (data == NULL || len == 0) return NULL;
  walk_t w = {.start = data, .max_depth = max_depth > 0 ? max_depth : 1};
  if (walk(&w, desc, data, data + len, 1)) return NULL;
  GString *path = g_string_new("");
  int shown = w.fail_level < PATH_SHOWN ? w.fail_level : PATH_SHOWN;
  for (int i = 0; i < shown; i++) {
    if (i > 0) g_string_append_c(path, '.');
    g_string_append(path, w.path[i]);
  }
  if (w.fail_level > PATH_SHOWN) g_string_append(path, "...");
  weft_status_t *st =
      w.fail_nul
          ? weft_status_new(WEFT_INVALID_ARGUMENT,
                            "%s: string field '%s' holds a NUL byte (field at byte %zu)", what,
                            path->str, w.fail_at)
          : weft_status_new(WEFT_INVALID_ARGUMENT,
                            "%s: protobuf nesting deeper than %d levels at byte %zu (%s)", what,
                            w.max_depth, w.fail_at, path->str);
  g_string_free(path, TRUE);
  return st;
}

ProtobufCMessage *weft__pb_unpack(const ProtobufCMessageDescriptor *desc, const uint8_t *data,
                                  size_t len, const char *what, weft_status_t **status) {
  *status = weft__pb_check_depth(desc, data, len, WEFT_PB_MAX_DEPTH, what);
  if (*status) return NULL;
  return protobuf_c_message_unpack(desc, NULL, len, data);
}
