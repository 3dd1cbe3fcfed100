#!/usr/bin/env python3
"""Stand-in for CUDA's bin2c, used by scripts/bench-gpu only when `bin2c` is
not on PATH. Supports what libvmaf 3.2.0's src/meson.build passes:
    bin2c --const --padd 0x00 --name NAME FILE   (C source on stdout)"""
import sys

args, i = sys.argv[1:], 0
const, pad, name, path = False, b"", "data", None
while i < len(args):
    if args[i] == "--const":
        const = True
    elif args[i] == "--padd":
        i += 1
        pad = bytes(int(x, 0) for x in args[i].split(","))
    elif args[i] == "--name":
        i += 1
        name = args[i]
    else:
        path = args[i]
    i += 1
data = open(path, "rb").read() + pad
out = sys.stdout
out.write('#ifdef __cplusplus\nextern "C" {\n#endif\n\n')
out.write(("const " if const else "") + "unsigned char %s[] = {\n" % name)
for k in range(0, len(data), 16):
    out.write(",".join("0x%02x" % b for b in data[k:k + 16]) + (",\n" if k + 16 < len(data) else "\n"))
out.write("};\n\n#ifdef __cplusplus\n}\n#endif\n")
