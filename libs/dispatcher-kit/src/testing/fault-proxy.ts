import { createServer, connect, type Server, type Socket } from 'node:net';

/**
 * A TCP proxy on 127.0.0.1 in front of a channel's real target, to make the faults the conformance suite needs
 * without touching the target: refuse every connection (nothing reaches the target), cut every open connection,
 * let the next request through and lose its answer (the target acts; the dispatcher never hears of it), or let it
 * through and keep its answer back on a connection left open (the dispatcher's own timeout must end the wait).
 */
export class FaultProxy {
  private server: Server | undefined;
  private readonly pairs = new Set<{ client: Socket; upstream: Socket; answers: 'forward' | 'cut' | 'withhold' }>();
  /** Armed: the next client data holding `marker` goes through, and the answer to it is lost (`cut`) or withheld. */
  private armed: { marker: Buffer; then: 'cut' | 'withhold'; fire: () => void } | undefined;
  private fired: Promise<void> = Promise.resolve();
  /** Where the proxy listens on 127.0.0.1: the port the channel's contract names instead of the target's. */
  port = 0;

  private constructor(private readonly targetPort: number) {}

  /** A proxy in front of the target listening on 127.0.0.1:`targetPort`, on a free port of its own. */
  static async start(targetPort: number): Promise<FaultProxy> {
    const proxy = new FaultProxy(targetPort);
    await proxy.listen(0);
    return proxy;
  }

  private listen(port: number): Promise<void> {
    const server = createServer((client) => this.accept(client));
    this.server = server;
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        this.port = (server.address() as { port: number }).port;
        resolve();
      });
    });
  }

  private accept(client: Socket): void {
    const upstream = connect(this.targetPort, '127.0.0.1');
    const pair: { client: Socket; upstream: Socket; answers: 'forward' | 'cut' | 'withhold' } = { client, upstream, answers: 'forward' };
    this.pairs.add(pair);
    const cut = () => {
      client.destroy();
      upstream.destroy();
      this.pairs.delete(pair);
    };
    client.on('data', (chunk: Buffer) => {
      if (this.armed !== undefined && chunk.includes(this.armed.marker)) {
        pair.answers = this.armed.then;
        this.armed.fire();
        this.armed = undefined;
      }
      upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      if (pair.answers === 'cut') cut();
      else if (pair.answers === 'forward') client.write(chunk);
    });
    client.on('error', cut);
    upstream.on('error', cut);
    client.on('close', cut);
    upstream.on('close', cut);
  }

  /** The next request whose bytes hold `marker` reaches the target; its answer is lost and the connection cut. */
  loseNextAnswer(marker: string | Buffer): void {
    this.arm(marker, 'cut');
  }

  /** The next request whose bytes hold `marker` reaches the target; its answer is held back, the connection left open. */
  withholdNextAnswer(marker: string | Buffer): void {
    this.arm(marker, 'withhold');
  }

  /** Resolves once the fault armed last has struck (at once when it has, or when none was armed). */
  whenFired(): Promise<void> {
    return this.fired;
  }

  private arm(marker: string | Buffer, then: 'cut' | 'withhold'): void {
    let fire: () => void = () => undefined;
    this.fired = new Promise((resolve) => (fire = resolve));
    this.armed = { marker: Buffer.isBuffer(marker) ? marker : Buffer.from(marker, 'utf8'), then, fire };
  }

  /** From now on nothing the target sends on the connections open now reaches the client; they stay open. */
  withholdAll(): void {
    for (const pair of this.pairs) pair.answers = 'withhold';
  }

  /** Cuts every open connection (as a network that drops them would). */
  cutAll(): void {
    for (const { client, upstream } of this.pairs) {
      client.destroy();
      upstream.destroy();
    }
    this.pairs.clear();
  }

  /** While on, nothing listens on the proxy's port: a connection is refused and nothing reaches the target. */
  async refuse(on: boolean): Promise<void> {
    if (on && this.server !== undefined) {
      const server = this.server;
      this.server = undefined;
      this.cutAll();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    } else if (!on && this.server === undefined) {
      await this.listen(this.port);
    }
  }

  /** Closes the proxy and every connection through it. */
  async stop(): Promise<void> {
    await this.refuse(true);
  }
}
