/**
 * The header of a SQLite file's WAL index (`<file>-shm`), as SQLite documents it (the WAL-index format of
 * https://sqlite.org/walformat.html): its first 48 bytes, which every commit rewrites — among them `iChange`, a
 * counter each commit increments, the number of valid frames, and the checksum of the header. Checkpoints do not
 * change it. Two reads that give the same 48 bytes therefore saw the same commits, and a reader can tell that nobody
 * committed since a known commit with one `pread` instead of a read transaction of its connection.
 *
 * Only a positive answer is trusted: a header that differs (another commit, a read racing a writer's update of it,
 * a file recovered after a crash) sends the reader back to what it did without it. Where the index is not a file
 * (SQLite keeps it in memory in exclusive locking mode) nothing is read and nothing is ever said to be unchanged.
 */
import { closeSync, openSync, readSync } from 'node:fs';
import { endianness } from 'node:os';

const HEADER_BYTES = 48;
/** `iChange`: the header's third 32-bit word, in the machine's byte order. */
const CHANGE_OFFSET = 8;

export interface WalIndexHeader {
  /** The header now; `undefined` when it cannot be read. */
  read(): Uint8Array | undefined;
  /**
   * The header after a commit of this connection, given the header read before it under the same write lock: the
   * header now when exactly one commit was counted since (this one); `undefined` when another connection's commit may
   * have come between the commit and this read.
   */
  afterOwnCommit(before: Uint8Array | undefined): Uint8Array | undefined;
  /** Whether the header now is `known`, byte for byte. */
  is(known: Uint8Array): boolean;
  close(): void;
}

/** The WAL index header of `file` (the database file, as SQLite was given it); opened on first use. */
export function walIndexHeader(file: string): WalIndexHeader {
  let fd: number | undefined;
  let unavailable = false;
  const scratch = Buffer.alloc(HEADER_BYTES);
  const littleEndian = endianness() === 'LE';
  const changeOf = (header: Uint8Array) => new DataView(header.buffer, header.byteOffset, HEADER_BYTES).getUint32(CHANGE_OFFSET, littleEndian);
  const readInto = (into: Buffer): boolean => {
    if (unavailable) return false;
    try {
      fd ??= openSync(`${file}-shm`, 'r');
      return readSync(fd, into, 0, HEADER_BYTES, 0) === HEADER_BYTES;
    } catch {
      // No index file (exclusive locking mode, an in-memory database) or one that cannot be read: never trusted.
      unavailable = true;
      return false;
    }
  };
  return {
    read() {
      const header = Buffer.alloc(HEADER_BYTES);
      return readInto(header) ? header : undefined;
    },
    afterOwnCommit(before) {
      if (before === undefined) return undefined;
      const after = this.read();
      if (after === undefined) return undefined;
      return changeOf(after) === ((changeOf(before) + 1) >>> 0) ? after : undefined;
    },
    is(known) {
      return readInto(scratch) && scratch.equals(known);
    },
    close() {
      if (fd !== undefined) closeSync(fd);
      fd = undefined;
      unavailable = true;
    },
  };
}
