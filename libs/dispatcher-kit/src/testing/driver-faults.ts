import { defineChannel, type ChannelAttempt, type ChannelDriver, type KitChannel, type SendOutcome } from '@oncegate/dispatcher-kit';

/**
 * Faults at the driver's boundary, for channels whose target is not reached over TCP (a file, a queue's client
 * library, a local device) where `FaultProxy` has nothing to stand between. The channel's kit is wrapped: each fault
 * lets the driver's real `send` take effect at the target and then replaces what it answered with what a broken
 * connection would have left, so the conformance suite's lost-answer, timeout and killed-dispatcher cases run the
 * same as over a proxy.
 *
 * ```ts
 * const { kit, faults } = DriverFaults.around(ledgerKit);
 * // in the subject: kit, and target: { loseNextAnswer: () => faults.loseNextAnswer(), … }
 * ```
 */
export class DriverFaults {
  private armed: 'lose' | 'withhold' | undefined;
  private refusing = false;
  private struck: Promise<void> = Promise.resolve();
  private strike: (() => void) | undefined;

  private constructor() {}

  /** The kit, with every driver it opens behind these faults. */
  static around(kit: KitChannel): { readonly kit: KitChannel; readonly faults: DriverFaults } {
    const faults = new DriverFaults();
    const definition = { ...kit.definition, open: async (...args: Parameters<KitChannel['definition']['open']>) => faults.wrap(await kit.definition.open(...args)) };
    return { kit: defineChannel(definition), faults };
  }

  /** The next attempt takes effect and its answer is lost: the dispatcher is told the connection broke after sending. */
  loseNextAnswer(): void {
    this.arm('lose');
  }

  /** The next attempt takes effect and no answer comes: after the contract's response timeout the dispatcher is told so. */
  withholdNextAnswer(): void {
    this.arm('withhold');
  }

  /** While on, nothing is sent: every attempt is answered as a target that cannot be reached. */
  unreachable(on: boolean): void {
    this.refusing = on;
  }

  /** Resolves once the fault armed last has struck. */
  faultStruck(): Promise<void> {
    return this.struck;
  }

  private arm(fault: 'lose' | 'withhold'): void {
    this.armed = fault;
    this.struck = new Promise<void>((resolve) => (this.strike = resolve));
  }

  private wrap(driver: ChannelDriver): ChannelDriver {
    const send = async (attempt: ChannelAttempt): Promise<SendOutcome> => {
      if (this.refusing) return { kind: 'not_sent', reason: 'the target cannot be reached (a fault of the test)' };
      const fault = this.armed;
      this.armed = undefined;
      const answer = await driver.send(attempt);
      if (fault === undefined) return answer;
      this.strike?.();
      if (fault === 'lose') return { kind: 'unknown', reason: 'connection_reset' };
      await new Promise((resolve) => setTimeout(resolve, attempt.limits.responseTimeoutMs));
      return { kind: 'unknown', reason: 'timeout_after_send' };
    };
    // Delegated one by one: a driver is often a class, whose methods a spread would not copy.
    return {
      send,
      ...(driver.preflight ? { preflight: driver.preflight.bind(driver) } : {}),
      ...(driver.queryStatus ? { queryStatus: driver.queryStatus.bind(driver) } : {}),
      ...(driver.probeMarker ? { probeMarker: driver.probeMarker.bind(driver) } : {}),
      ...(driver.close ? { close: driver.close.bind(driver) } : {}),
    };
  }
}
