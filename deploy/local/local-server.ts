/** A server the local deployment and the tests run on loopback, in a folder of its own (temporary unless kept). */
export interface LocalServer {
  /** Shuts the server down and keeps its folder: connections fail until `start`. */
  shutdown(): Promise<void>;
  /** Starts the server again after `shutdown`, on the same port(s) with the same data. */
  start(): Promise<void>;
  /** Stops the server at once and removes its folder; a kept folder (`dir`) is shut down gracefully and kept. */
  stop(): Promise<void>;
}
