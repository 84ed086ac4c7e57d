// TextEncoder and TextDecoder for the Pyodide bundle (env.ts hands them in lexically): a bare
// V8 context has neither, and the glue uses them for its snapshot header and for a few string
// conversions (its hot UTF-8 path looks on globalThis, finds nothing and uses its own loop).
// UTF-8, Latin-1 and UTF-16LE: the encodings the glue names.

export class TextEncoder {
  readonly encoding = "utf-8";
  encode(text = ""): Uint8Array {
    const out = new Uint8Array(text.length * 3);
    return out.subarray(0, this.encodeInto(text, out).written);
  }
  encodeInto(text: string, out: Uint8Array): { read: number; written: number } {
    let w = 0;
    let i = 0;
    for (; i < text.length; i++) {
      let c = text.charCodeAt(i);
      if (c >= 0xd800 && c < 0xdc00 && i + 1 < text.length) {
        const d = text.charCodeAt(i + 1);
        if (d >= 0xdc00 && d < 0xe000) {
          c = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00);
        }
      }
      if (c >= 0xd800 && c < 0xe000) c = 0xfffd; // a lone surrogate
      const size = c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
      if (w + size > out.length) break;
      if (size === 1) out[w++] = c;
      else if (size === 2) {
        out[w++] = 0xc0 | (c >> 6);
        out[w++] = 0x80 | (c & 63);
      } else if (size === 3) {
        out[w++] = 0xe0 | (c >> 12);
        out[w++] = 0x80 | ((c >> 6) & 63);
        out[w++] = 0x80 | (c & 63);
      } else {
        out[w++] = 0xf0 | (c >> 18);
        out[w++] = 0x80 | ((c >> 12) & 63);
        out[w++] = 0x80 | ((c >> 6) & 63);
        out[w++] = 0x80 | (c & 63);
        i++;
      }
    }
    return { read: i, written: w };
  }
}

export class TextDecoder {
  readonly encoding: string;
  private readonly fatal: boolean;
  constructor(label = "utf-8", options: { fatal?: boolean } = {}) {
    const name = label.toLowerCase().replace(/[^a-z0-9]/g, "");
    if (name === "utf8") this.encoding = "utf-8";
    else if (name === "latin1" || name === "iso88591" || name === "ascii" || name === "windows1252") this.encoding = "windows-1252";
    else if (name === "utf16le" || name === "utf16") this.encoding = "utf-16le";
    else throw new RangeError(`The encoding label provided ('${label}') is invalid.`);
    this.fatal = options.fatal === true;
  }
  decode(input?: ArrayBuffer | ArrayBufferView): string {
    if (input === undefined) return "";
    const bytes = ArrayBuffer.isView(input) ? new Uint8Array(input.buffer, input.byteOffset, input.byteLength) : new Uint8Array(input);
    let out = "";
    const parts: string[] = [];
    const flush = () => {
      parts.push(out);
      out = "";
    };
    if (this.encoding === "windows-1252") {
      for (let i = 0; i < bytes.length; i++) {
        out += String.fromCharCode(bytes[i]);
        if (out.length > 8192) flush();
      }
    } else if (this.encoding === "utf-16le") {
      for (let i = 0; i + 1 < bytes.length; i += 2) {
        out += String.fromCharCode(bytes[i] | (bytes[i + 1] << 8));
        if (out.length > 8192) flush();
      }
    } else {
      for (let i = 0; i < bytes.length; ) {
        const b = bytes[i];
        const size = b < 0x80 ? 1 : b >= 0xc2 && b < 0xe0 ? 2 : b >= 0xe0 && b < 0xf0 ? 3 : b >= 0xf0 && b < 0xf5 ? 4 : 0;
        let c = size === 1 ? b : size === 2 ? b & 31 : size === 3 ? b & 15 : b & 7;
        let ok = size > 0 && i + size <= bytes.length;
        for (let k = 1; ok && k < size; k++) {
          const n = bytes[i + k];
          if ((n & 0xc0) !== 0x80) ok = false;
          else c = (c << 6) | (n & 63);
        }
        if (ok && ((size === 3 && (c < 0x800 || (c >= 0xd800 && c < 0xe000))) || (size === 4 && (c < 0x10000 || c > 0x10ffff)))) ok = false;
        if (!ok) {
          if (this.fatal) throw new TypeError("The encoded data was not valid for encoding utf-8");
          out += "\ufffd";
          i++;
        } else {
          out += String.fromCodePoint(c);
          i += size;
        }
        if (out.length > 8192) flush();
      }
    }
    flush();
    return parts.join("");
  }
}
