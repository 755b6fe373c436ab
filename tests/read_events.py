#!/usr/bin/env python3
"""An event-file reader written without Weft, for tests/test_tensorboard.c: the standard library
only (struct, a CRC-32C computed here, protobuf wire format decoded by hand with TensorFlow's field
numbers from core/util/event.proto and core/framework/summary.proto, graph.proto). It checks
every record's framing and both masked CRCs, and prints one JSON object:

  {"records": N, "file_version": "...", "events": [{"step", "wall_time", "values": [[tag, v]],
   "graph_devices": {node: device} or absent, "session_log": status or absent}]}

Exit status 1 with a message naming the file and offset when a record is corrupt.
Usage: read_events.py EVENT_FILE
"""
import json
import struct
import sys

POLY = 0x82F63B78  # CRC-32C (Castagnoli), reflected
TABLE = []
for i in range(256):
    c = i
    for _ in range(8):
        c = (c >> 1) ^ POLY if c & 1 else c >> 1
    TABLE.append(c)


def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def masked(data):
    c = crc32c(data)
    return ((((c >> 15) | (c << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def varint(buf, i):
    shift = result = 0
    while True:
        if i >= len(buf):
            raise ValueError("varint runs past the end")
        b = buf[i]
        i += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, i
        shift += 7


def fields(buf):
    """(field number, wire type, value) of a message; value is int, or bytes for wire type 2."""
    i = 0
    while i < len(buf):
        key, i = varint(buf, i)
        num, wire = key >> 3, key & 7
        if wire == 0:
            v, i = varint(buf, i)
        elif wire == 1:
            v = buf[i:i + 8]
            i += 8
        elif wire == 5:
            v = buf[i:i + 4]
            i += 4
        elif wire == 2:
            n, i = varint(buf, i)
            v = buf[i:i + n]
            i += n
        else:
            raise ValueError("wire type %d" % wire)
        if i > len(buf):
            raise ValueError("field %d runs past the end" % num)
        yield num, wire, v


def summary_values(buf):
    out = []
    for num, wire, v in fields(buf):
        if num != 1 or wire != 2:  # Summary.value
            continue
        tag, value = "", None
        for n2, w2, v2 in fields(v):
            if n2 == 1 and w2 == 2:  # Value.tag
                tag = v2.decode()
            elif n2 == 2 and w2 == 5:  # Value.simple_value
                value = struct.unpack("<f", v2)[0]
            elif n2 == 5 and w2 == 2:  # Value.histo
                value = "histo"
        out.append([tag, value])
    return out


def graph_devices(buf):
    devices = {}
    for num, wire, v in fields(buf):
        if num != 1 or wire != 2:  # GraphDef.node
            continue
        name = device = ""
        for n2, w2, v2 in fields(v):
            if n2 == 1 and w2 == 2:  # NodeDef.name
                name = v2.decode()
            elif n2 == 4 and w2 == 2:  # NodeDef.device
                device = v2.decode()
        devices[name] = device
    return devices


def main(path):
    data = open(path, "rb").read()
    off = 0
    events = []
    version = None
    while off < len(data):
        if off + 12 > len(data):
            sys.exit("%s: truncated header at offset %d" % (path, off))
        header = data[off:off + 8]
        (n,) = struct.unpack("<Q", header)
        (hcrc,) = struct.unpack("<I", data[off + 8:off + 12])
        if masked(header) != hcrc:
            sys.exit("%s: bad length crc at offset %d" % (path, off))
        body = data[off + 12:off + 12 + n]
        if len(body) != n or off + 16 + n > len(data):
            sys.exit("%s: truncated record at offset %d" % (path, off))
        (dcrc,) = struct.unpack("<I", data[off + 12 + n:off + 16 + n])
        if masked(body) != dcrc:
            sys.exit("%s: bad data crc at offset %d" % (path, off))
        ev = {"step": 0, "wall_time": 0.0, "values": []}
        for num, wire, v in fields(body):
            if num == 1 and wire == 1:
                ev["wall_time"] = struct.unpack("<d", v)[0]
            elif num == 2 and wire == 0:
                ev["step"] = v
            elif num == 3 and wire == 2:
                version = v.decode()
            elif num == 4 and wire == 2:
                ev["graph_devices"] = graph_devices(v)
            elif num == 5 and wire == 2:
                ev["values"] = summary_values(v)
            elif num == 7 and wire == 2:
                status = 0
                for n2, w2, v2 in fields(v):
                    if n2 == 1 and w2 == 0:
                        status = v2
                ev["session_log"] = status
        events.append(ev)
        off += 16 + n
    print(json.dumps({"records": len(events), "file_version": version, "events": events}))


if __name__ == "__main__":
    main(sys.argv[1])
