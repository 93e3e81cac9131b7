/**
 * The part of ssh2 1.17 this library uses (node_modules/ssh2/README.md "Client"): the package ships no typings
 * and the workspace has no @types/ssh2. Delete this file if @types/ssh2 is ever added.
 */
declare module 'ssh2' {
  import type { EventEmitter } from 'node:events';
  import type { Duplex, Readable } from 'node:stream';

  export interface ConnectConfig {
    host: string;
    port: number;
    username: string;
    privateKey?: string;
    passphrase?: string;
    /** Method names tried in order; credentials come from this config. */
    authHandler?: string[];
    /** Called with the raw host key blob; return false to disconnect. */
    hostVerifier?: (key: Buffer) => boolean;
    algorithms?: { serverHostKey?: string[] };
    /** Milliseconds from the TCP connect until authentication succeeded. */
    readyTimeout?: number;
    keepaliveInterval?: number;
    keepaliveCountMax?: number;
    /** Receives ssh2's local debug lines. */
    debug?: (message: string) => void;
  }

  /** An exec channel: readable stdout, writable stdin. `exit` gives (code) or (null, signalName, …). */
  export interface ClientChannel extends Duplex {
    readonly stderr: Readable;
    close(): void;
  }

  /** `level` is `client-socket`, `client-ssh`, `client-timeout`, `client-authentication`, `handshake`, … */
  export interface ClientError extends Error {
    level?: string;
    code?: string;
    reason?: number;
  }

  export class Client extends EventEmitter {
    connect(config: ConnectConfig): this;
    exec(command: string, callback: (error: ClientError | undefined, channel: ClientChannel) => void): this;
    end(): this;
    destroy(): this;
  }

  const ssh2: { readonly Client: typeof Client };
  export default ssh2;
}
