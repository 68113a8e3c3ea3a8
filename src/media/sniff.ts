/**
 * The content type of a file from its first bytes, for a response that did not say (or said
 * only application/octet-stream). The formats phones send and receive: images, video, audio,
 * PDF, vCard. Signatures as each format's specification fixes them (the WHATWG MIME Sniffing
 * standard for the common ones; ISO BMFF `ftyp` brands for HEIC, AVIF, MP4, QuickTime, 3GPP).
 */

const ascii = (bytes: Uint8Array, at: number, length: number) => String.fromCharCode(...bytes.subarray(at, at + length));

const starts = (bytes: Uint8Array, ...signature: number[]) => signature.every((b, i) => bytes[i] === b);

/** ISO base media file format brands (the `ftyp` box at offset 4) onto types. */
const FTYP_BRANDS: Record<string, string> = {
  heic: "image/heic",
  heix: "image/heic",
  heim: "image/heic",
  heis: "image/heic",
  hevc: "image/heic-sequence",
  hevx: "image/heic-sequence",
  mif1: "image/heif",
  msf1: "image/heif-sequence",
  avif: "image/avif",
  avis: "image/avif",
  "qt  ": "video/quicktime",
  "M4A ": "audio/mp4",
  "M4B ": "audio/mp4",
  "M4V ": "video/mp4",
  "3gp4": "video/3gpp",
  "3gp5": "video/3gpp",
  "3gp6": "video/3gpp",
  "3g2a": "video/3gpp2",
};

export function sniffContentType(bytes: Uint8Array): string | null {
  if (starts(bytes, 0xff, 0xd8, 0xff)) return "image/jpeg";
  if (starts(bytes, 0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a)) return "image/png";
  const head = ascii(bytes, 0, 12);
  if (head.startsWith("GIF87a") || head.startsWith("GIF89a")) return "image/gif";
  if (head.startsWith("RIFF") && head.slice(8) === "WEBP") return "image/webp";
  if (head.startsWith("RIFF") && head.slice(8) === "WAVE") return "audio/wav";
  if (head.startsWith("RIFF") && head.slice(8) === "AVI ") return "video/x-msvideo";
  if (head.slice(4, 8) === "ftyp") {
    const brand = ascii(bytes, 8, 4);
    // Any other brand (isom, mp41, mp42, avc1, dash…) is an MP4 video.
    return FTYP_BRANDS[brand] ?? "video/mp4";
  }
  if (head.startsWith("%PDF-")) return "application/pdf";
  if (head.startsWith("OggS")) return "audio/ogg";
  if (head.startsWith("fLaC")) return "audio/flac";
  if (head.startsWith("#!AMR")) return "audio/amr";
  if (head.startsWith("ID3")) return "audio/mpeg";
  // An MPEG audio frame: 11 sync bits, then not the reserved version and not layer 0.
  if (bytes.length >= 2 && bytes[0] === 0xff && (bytes[1]! & 0xe0) === 0xe0 && (bytes[1]! & 0x18) !== 0x08 && (bytes[1]! & 0x06) !== 0) return "audio/mpeg";
  if (starts(bytes, 0x1a, 0x45, 0xdf, 0xa3)) return "video/webm";
  if (starts(bytes, 0x49, 0x49, 0x2a, 0x00) || starts(bytes, 0x4d, 0x4d, 0x00, 0x2a)) return "image/tiff";
  if (/^BEGIN:VCARD\r?\n/i.test(ascii(bytes, 0, 13))) return "text/vcard";
  return null;
}

/** A file name extension for a content type (BlueBubbles names uploads; the Mac goes by the name). */
const EXTENSIONS: Record<string, string> = {
  "image/jpeg": "jpg",
  "image/png": "png",
  "image/gif": "gif",
  "image/webp": "webp",
  "image/heic": "heic",
  "image/heif": "heif",
  "image/avif": "avif",
  "image/tiff": "tiff",
  "video/mp4": "mp4",
  "video/quicktime": "mov",
  "video/3gpp": "3gp",
  "video/webm": "webm",
  "audio/mpeg": "mp3",
  "audio/mp4": "m4a",
  "audio/wav": "wav",
  "audio/ogg": "ogg",
  "audio/amr": "amr",
  "audio/flac": "flac",
  "application/pdf": "pdf",
  "text/vcard": "vcf",
  "text/plain": "txt",
};

export function extensionOf(contentType: string): string {
  return EXTENSIONS[contentType] ?? "bin";
}
