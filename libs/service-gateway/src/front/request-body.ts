import type { IncomingMessage } from 'node:http';

/**
 * A request's body, refused as soon as it is known to exceed `limit` bytes: by its declared `content-length`, before a
 * byte is read, or as it arrives. `tooLarge` makes the refusal (given the declared length when that was what told).
 */
export async function readBodyWithin(req: IncomingMessage, limit: number, tooLarge: (declared?: number) => Error): Promise<Buffer> {
  const declared = Number(req.headers['content-length'] ?? NaN);
  if (Number.isFinite(declared) && declared > limit) throw tooLarge(declared);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > limit) throw tooLarge();
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}
