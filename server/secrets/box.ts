// Encryption at rest for project secrets: AES-256-GCM under the operator's key, with the
// project and name as associated data, so a stored value cannot be moved to another row (or
// project) and still decrypt. The key is GRADEBOX_SECRETS_KEY (32 bytes, hex or base64); on
// the embedded SQLite default the server makes one at first start and saves it next to the
// database (bootstrap.ts), as it does the metrics token.

import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";

const VERSION = "v1";

/** 32 bytes from 64 hex digits or base64(url) of 32 bytes; undefined for anything else. */
export function parseSecretsKey(text: string): Buffer | undefined {
  const t = text.trim();
  if (/^[0-9a-fA-F]{64}$/.test(t)) return Buffer.from(t, "hex");
  if (/^[A-Za-z0-9+/_-]{43}=?$/.test(t)) {
    const key = Buffer.from(t.replace(/-/g, "+").replace(/_/g, "/"), "base64");
    return key.length === 32 ? key : undefined;
  }
  return undefined;
}

export const newSecretsKey = () => randomBytes(32).toString("base64url");

export class SecretBox {
  constructor(private readonly key: Buffer) {
    if (key.length !== 32) throw new Error("a secrets key is 32 bytes");
  }

  seal(project: string, name: string, value: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv("aes-256-gcm", this.key, iv);
    cipher.setAAD(aad(project, name));
    const body = Buffer.concat([cipher.update(value, "utf8"), cipher.final()]);
    return `${VERSION}:${Buffer.concat([iv, cipher.getAuthTag(), body]).toString("base64")}`;
  }

  /** The value, or undefined when it was sealed under another key or for another row. */
  open(project: string, name: string, sealed: string): string | undefined {
    if (!sealed.startsWith(`${VERSION}:`)) return undefined;
    const raw = Buffer.from(sealed.slice(VERSION.length + 1), "base64");
    if (raw.length < 28) return undefined;
    try {
      const decipher = createDecipheriv("aes-256-gcm", this.key, raw.subarray(0, 12));
      decipher.setAAD(aad(project, name));
      decipher.setAuthTag(raw.subarray(12, 28));
      return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString("utf8");
    } catch {
      return undefined;
    }
  }
}

const aad = (project: string, name: string) => Buffer.from(`gradebox-secret\0${project}\0${name}`, "utf8");
