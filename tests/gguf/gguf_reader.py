#!/usr/bin/env python3
"""An independent GGUF reader (standard library only), written from the GGUF specification, to
cross-check Forge's writer and reader. Prints the file as JSON: header, metadata, tensor table.

Usage: gguf_reader.py FILE.gguf        (exit status 1 and a one-line reason for a bad file)
"""
import json
import struct
import sys
import zlib

# GGUF value types (spec: "enum gguf_metadata_value_type").
VALUE_TYPES = {
    0: ("u8", "<B"), 1: ("i8", "<b"), 2: ("u16", "<H"), 3: ("i16", "<h"),
    4: ("u32", "<I"), 5: ("i32", "<i"), 6: ("f32", "<f"), 7: ("bool", "<B"),
    8: ("string", None), 9: ("array", None), 10: ("u64", "<Q"), 11: ("i64", "<q"),
    12: ("f64", "<d"),
}

# ggml tensor types: id -> (name, elements per block, bytes per block). Block sizes are spelled
# out from the block layouts in ggml's quantization formats.
F16 = 2
TENSOR_TYPES = {
    0: ("F32", 1, 4),
    1: ("F16", 1, 2),
    2: ("Q4_0", 32, F16 + 32 // 2),                        # d, 4-bit quants
    3: ("Q4_1", 32, 2 * F16 + 32 // 2),                    # d, m, 4-bit quants
    6: ("Q5_0", 32, F16 + 4 + 32 // 2),                    # d, high bits, low nibbles
    7: ("Q5_1", 32, 2 * F16 + 4 + 32 // 2),
    8: ("Q8_0", 32, F16 + 32),                             # d, int8 quants
    9: ("Q8_1", 32, 2 * F16 + 32),
    10: ("Q2_K", 256, 256 // 16 + 256 // 4 + 2 * F16),     # scales, 2-bit quants, d, dmin
    11: ("Q3_K", 256, 256 // 8 + 256 // 4 + 12 + F16),     # hmask, quants, scales, d
    12: ("Q4_K", 256, 2 * F16 + 12 + 256 // 2),            # d, dmin, scales, quants
    13: ("Q5_K", 256, 2 * F16 + 12 + 256 // 8 + 256 // 2),
    14: ("Q6_K", 256, 256 // 2 + 256 // 4 + 256 // 16 + F16),  # ql, qh, scales, d
    15: ("Q8_K", 256, 4 + 256 + 2 * 256 // 16),            # f32 d, quants, block sums
    24: ("I8", 1, 1),
    25: ("I16", 1, 2),
    26: ("I32", 1, 4),
    27: ("I64", 1, 8),
    28: ("F64", 1, 8),
    30: ("BF16", 1, 2),
}


class GgufError(Exception):
    pass


class Reader:
    def __init__(self, data):
        self.data = data
        self.pos = 0

    def take(self, n, what):
        if n > len(self.data) - self.pos:
            raise GgufError(f"truncated: {what} needs {n} bytes at {self.pos}")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def unpack(self, fmt, what):
        return struct.unpack(fmt, self.take(struct.calcsize(fmt), what))[0]

    def string(self, what):
        n = self.unpack("<Q", what + " length")
        return self.take(n, what)

    def value(self, type_id, depth=0):
        if type_id not in VALUE_TYPES:
            raise GgufError(f"unknown value type {type_id}")
        name, fmt = VALUE_TYPES[type_id]
        if name == "string":
            raw = self.string("string")
            return {"type": name, "hex": raw.hex(), "text": raw.decode("utf-8", "replace")}
        if name == "array":
            if depth > 8:
                raise GgufError("arrays nested too deep")
            elem = self.unpack("<I", "array type")
            n = self.unpack("<Q", "array length")
            if elem not in VALUE_TYPES:
                raise GgufError(f"unknown array element type {elem}")
            if n > len(self.data) - self.pos:
                raise GgufError(f"array length {n} exceeds the file")
            items = [self.value(elem, depth + 1) for _ in range(n)]
            return {"type": name, "elem": VALUE_TYPES[elem][0], "items": items}
        raw = self.take(struct.calcsize(fmt), name)
        v = struct.unpack(fmt, raw)[0]
        if name == "bool":
            if v > 1:
                raise GgufError(f"bool value {v}")
            return {"type": name, "value": bool(v)}
        if name in ("f32", "f64"):
            finite = v == v and v not in (float("inf"), float("-inf"))
            bits = struct.unpack("<I" if name == "f32" else "<Q", raw)[0]
            return {"type": name, "value": v if finite else None, "bits": bits}
        return {"type": name, "value": v}


def read_gguf(data):
    r = Reader(data)
    if r.take(4, "magic") != b"GGUF":
        raise GgufError("bad magic")
    version = r.unpack("<I", "version")
    if version not in (2, 3):
        raise GgufError(f"unsupported version {version}")
    n_tensors = r.unpack("<Q", "tensor count")
    n_kv = r.unpack("<Q", "metadata count")
    metadata = []
    alignment = 32
    for _ in range(n_kv):
        key = r.string("key").decode("utf-8")
        v = r.value(r.unpack("<I", "value type"))
        if key == "general.alignment":
            if v["type"] != "u32" or v["value"] == 0 or v["value"] & (v["value"] - 1):
                raise GgufError(f"bad general.alignment {v}")
            alignment = v["value"]
        metadata.append({"key": key, "value": v})
    tensors = []
    for _ in range(n_tensors):
        name = r.string("tensor name").decode("utf-8")
        n_dims = r.unpack("<I", "n_dims")
        dims = [r.unpack("<Q", "dim") for _ in range(n_dims)]
        type_id = r.unpack("<I", "tensor type")
        offset = r.unpack("<Q", "tensor offset")
        if offset % alignment:
            raise GgufError(f"{name}: offset {offset} not aligned to {alignment}")
        tensors.append({"name": name, "dims": dims, "type": type_id, "offset": offset})
    data_offset = (r.pos + alignment - 1) // alignment * alignment
    for t in tensors:
        n = 1
        for d in t["dims"]:
            n *= d
        type_name, block_elems, block_bytes = TENSOR_TYPES.get(t["type"], ("?", 0, 0))
        t["type_name"] = type_name
        if block_elems == 0 or n % block_elems:
            t["n_bytes"] = None
            continue
        t["n_bytes"] = n // block_elems * block_bytes
        start = data_offset + t["offset"]
        if start + t["n_bytes"] > len(data):
            raise GgufError(f"{t['name']}: data past the end of the file")
        t["crc32"] = zlib.crc32(data[start:start + t["n_bytes"]])
    return {
        "version": version, "alignment": alignment, "data_offset": data_offset,
        "file_size": len(data), "metadata": metadata, "tensors": tensors,
    }


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    with open(argv[1], "rb") as f:
        data = f.read()
    try:
        out = read_gguf(data)
    except (GgufError, UnicodeDecodeError) as e:
        print(f"gguf_reader: {argv[1]}: {e}", file=sys.stderr)
        return 1
    json.dump(out, sys.stdout, allow_nan=False)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
