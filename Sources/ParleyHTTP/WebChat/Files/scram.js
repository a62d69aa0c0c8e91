// SASL SCRAM-SHA-256 (RFC 5802, RFC 7677) with WebCrypto, without channel binding (a page
// cannot see the TLS connection). The server's signature is checked, so a server that does
// not know the password cannot pretend to.

const encoder = new TextEncoder();

function toBase64(bytes) { return btoa(String.fromCharCode(...new Uint8Array(bytes))); }
function fromBase64(text) { return Uint8Array.from(atob(text), (c) => c.charCodeAt(0)); }
export function utf8ToBase64(text) { return toBase64(encoder.encode(text)); }
export function base64ToUTF8(text) { return new TextDecoder().decode(fromBase64(text)); }

async function hmac(key, data) {
  const k = await crypto.subtle.importKey("raw", key, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  return new Uint8Array(await crypto.subtle.sign("HMAC", k, typeof data === "string" ? encoder.encode(data) : data));
}

/** RFC 5802 §5.1: '=' and ',' in the name are escaped. (Names are not SASLprepped here: the
 *  server's nodeprep has already made them what the account is called.) */
function saslName(name) { return name.replace(/=/g, "=3D").replace(/,/g, "=2C"); }

function attributes(message) {
  const out = {};
  for (const part of message.split(",")) {
    const i = part.indexOf("=");
    if (i > 0) out[part.slice(0, i)] = part.slice(i + 1);
  }
  return out;
}

export class ScramSHA256 {
  constructor(username, password) {
    if (!crypto.subtle) throw new Error("This page is not a secure context (HTTPS or localhost): the browser offers no WebCrypto for SCRAM");
    this.password = password;
    this.nonce = toBase64(crypto.getRandomValues(new Uint8Array(18)));
    this.clientFirstBare = `n=${saslName(username)},r=${this.nonce}`;
  }

  /** The initial response (base64). */
  first() { return utf8ToBase64("n,," + this.clientFirstBare); }

  /** The answer (base64) to the server's challenge (base64). */
  async respond(challenge) {
    const serverFirst = base64ToUTF8(challenge);
    const a = attributes(serverFirst);
    const iterations = Number(a.i);
    if (!a.r || !a.r.startsWith(this.nonce) || !a.s || !(iterations >= 4096)) {
      throw new Error("The server's SCRAM challenge is not valid");
    }
    const key = await crypto.subtle.importKey("raw", encoder.encode(this.password), "PBKDF2", false, ["deriveBits"]);
    const salted = new Uint8Array(await crypto.subtle.deriveBits(
      { name: "PBKDF2", salt: fromBase64(a.s), iterations, hash: "SHA-256" }, key, 256));
    const clientKey = await hmac(salted, "Client Key");
    const storedKey = new Uint8Array(await crypto.subtle.digest("SHA-256", clientKey));
    const withoutProof = `c=biws,r=${a.r}`;
    const authMessage = `${this.clientFirstBare},${serverFirst},${withoutProof}`;
    const signature = await hmac(storedKey, authMessage);
    const proof = clientKey.map((byte, i) => byte ^ signature[i]);
    this.serverSignature = toBase64(await hmac(await hmac(salted, "Server Key"), authMessage));
    return utf8ToBase64(`${withoutProof},p=${toBase64(proof)}`);
  }

  /** Whether the additional data of <success/> proves the server knows the password. */
  verify(success) {
    return attributes(base64ToUTF8(success || "")).v === this.serverSignature;
  }
}
