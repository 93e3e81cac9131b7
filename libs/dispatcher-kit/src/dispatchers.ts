import { join } from 'node:path';
import type { INestMicroservice } from '@nestjs/common';
import type { InlineStep } from '@oncegate/execution-journal';
import { AttemptSweeper, dispatcherInstanceId, InstanceLeases } from '@oncegate/host-recovery';
import type { VaultService } from '@oncegate/host-vault';
import { closeInOrder, heldBeforeSend, PreparedCalls, type Host, type ServiceDefinition } from '@oncegate/service-host';
import type { ChannelDispatcher } from './channel-dispatcher';

/** What a channel's dispatcher is given to start: the vault, the prepared calls of this process, its id. */
export interface ChannelStart {
  readonly host: Host;
  readonly vault: VaultService;
  readonly prepared: PreparedCalls;
  /** Unique per process; held as a liveness lease before anything is dispatched. */
  readonly dispatcherId: string;
}

/** A channel's dispatcher service as a process hosts it: its Nest microservice and its controller. */
export interface StartedChannel {
  readonly app: INestMicroservice;
  readonly controller: ChannelDispatcher;
  /** After the microservice closed: the channel's connections. */
  close(): Promise<void>;
}

/** One channel (`http`, `ssh`, …): the name in its dispatcher ids and how its dispatcher service starts. */
export interface DispatchChannel {
  readonly channel: string;
  start(start: ChannelStart): Promise<StartedChannel>;
}

/** The dispatchers of a process, their liveness leases and the sweeper that settles lost attempts. */
export interface Dispatchers {
  /** Their first dispatches, to decide inline in the accepting commit (one process). */
  readonly inlineSteps: InlineStep[];
  /** Stops taking work and lets attempts in flight record their outcome. */
  drain(): Promise<void>;
  /** Drains, closes the microservices, then releases the leases: from then on nothing of this process is in flight. */
  close(): Promise<void>;
}

/** Starts the dispatchers of the given channels in this process. */
export async function hostDispatchers(host: Host, vault: VaultService, prepared: PreparedCalls, channels: readonly DispatchChannel[]): Promise<Dispatchers> {
  const { store, clock, config, instance } = host;
  // Dispatcher ids are unique per process; their liveness leases are held before anything can be dispatched.
  const role = host.options.front ?? (host.grouped ? 'serve' : 'http');
  const ids = channels.map((channel) => dispatcherInstanceId(channel.channel, role, instance));
  const locksDir = join(config.dataDir, 'instances');
  const leases = new InstanceLeases(store, clock, ids, config.instanceLeaseMs, { dir: locksDir, instance });
  await leases.start();
  host.opened.push({ close: () => leases.stop() });
  const started: StartedChannel[] = [];
  for (const [index, channel] of channels.entries()) {
    started.push(await channel.start({ host, vault, prepared, dispatcherId: ids[index]! }));
  }
  const inlineSteps: InlineStep[] = [];
  for (const { controller } of started) {
    controller.limitInFlight(config.dispatchInFlight);
    inlineSteps.push(heldBeforeSend(controller.inlineStep(), config.holdBeforeSendMs));
  }
  // Attempts that will never report (their process gone, or past their deadline) settle by class, whoever
  // dispatched them: at start, and as long as this process runs.
  const sweeper = new AttemptSweeper({ store, clock, ownDispatcherIds: new Set(ids), locksDir, everyMs: Math.max(100, Math.floor(config.instanceLeaseMs / 3)) });
  await sweeper.start();
  host.opened.push({ close: () => sweeper.stop() });
  // Once: `oncegate start` drains before it closes result delivery, and `close` drains again for the services apart.
  let drained: Promise<void> | undefined;
  const drain = () =>
    (drained ??= (async () => {
      await sweeper.stop();
      for (const { controller } of started) await controller.drain();
    })());
  return {
    inlineSteps,
    drain,
    close: () =>
      closeInOrder(
        drain,
        ...started.map(({ app }) => () => app.close()),
        // Only now is nothing of this process in flight: from here on its attempts count as gone.
        () => leases.stop(),
        ...started.map((channel) => () => channel.close()),
      ),
  };
}

/** A channel's dispatcher as a service of its own (`oncegate serve dispatcher-<channel>`). */
export function dispatcherService(channel: DispatchChannel): ServiceDefinition {
  return {
    name: `dispatcher-${channel.channel}`,
    // It sends the arguments the gateway sealed and seals what the target answered.
    sealedBlobs: { opens: ['arguments'], seals: ['result'] },
    async serve(host, together) {
      const dispatchers = await hostDispatchers(host, await together.vault(), together.prepared, [channel]);
      // Hosted beside the gateway's front, the first attempt is dispatched in the commit that accepts the call.
      const removeSteps = dispatchers.inlineSteps.map((step) => together.inlineSteps.add(step));
      return {
        close: async () => {
          for (const remove of removeSteps) remove();
          await dispatchers.close();
        },
      };
    },
  };
}
