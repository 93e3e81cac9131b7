import { Logger, Module, type DynamicModule } from '@nestjs/common';
import { channelNotices } from './channel-notices';
import type { PluginSectionCheck, ToolContract } from '@oncegate/contracts';
import type { EventStore } from '@oncegate/event-store';
import type { Clock } from '@oncegate/execution-journal';
import { EventStoreModule } from '@oncegate/nest-event-store';
import type { SealedStore } from '@oncegate/sealed-store';
import { dispatcherService, type DispatchChannel } from './dispatchers';
import {
  CLOCK,
  DISPATCHER_ID,
  microservice,
  PREPARED_CALLS,
  PreparedCalls,
  SEALED_STORE,
  serviceMain,
  TOOLS,
  VAULT,
  type ServiceDefinition,
} from '@oncegate/service-host';
import type { VaultService } from '@oncegate/host-vault';
import type { ChannelDefinition } from './channel-definition';
import type { HostChannelDefinition, HostChannelDriver } from './host-channel';
import { KitDispatcher, OPENED_CHANNEL, type OpenedChannel } from './kit-dispatcher';
import { channelOptionsReader } from './channel-options';
import { contractCheck } from './channel-schemas';

interface KitDependencies extends StandaloneDependencies {
  readonly prepared: PreparedCalls;
  readonly opened: OpenedChannel;
}

@Module({})
export class KitDispatcherModule {
  static forRoot(deps: KitDependencies): DynamicModule {
    return {
      module: KitDispatcherModule,
      imports: [EventStoreModule.forRoot({ open: () => deps.store })],
      controllers: [KitDispatcher],
      providers: [
        { provide: TOOLS, useValue: deps.tools },
        { provide: SEALED_STORE, useValue: deps.sealed },
        { provide: VAULT, useValue: deps.vault },
        { provide: DISPATCHER_ID, useValue: deps.dispatcherId },
        { provide: CLOCK, useValue: deps.clock },
        { provide: PREPARED_CALLS, useValue: deps.prepared },
        { provide: OPENED_CHANNEL, useValue: deps.opened },
      ],
    };
  }
}

/** A channel built on the kit: export it from the channel's module, and call `main()` in its process's entry point. */
export interface KitChannel {
  /** The definition the kit was made from. */
  readonly definition: ChannelDefinition;
  /**
   * Runs the channel's dispatcher as a process of its own (`node main.js [--config <file>]`): it opens the store and
   * the vault the configuration names, joins the channel's consumer group beside any other instance, and stops on
   * SIGTERM once its attempts in flight recorded their outcome.
   */
  main(argv?: readonly string[]): Promise<void>;
}

/** How this repository's processes host a kit's channel (not part of the package's API). */
export interface ChannelHosting {
  /** The definition as the host reads it (a built-in channel's driver opens on the host's context). */
  readonly definition: HostChannelDefinition;
  /** Its dispatcher among the dispatchers of a process (`oncegate start` hosts the built-in channels this way). */
  readonly channel: DispatchChannel;
  /** `dispatcher-<name>`: the channel's service, one instance of its consumer group per process. */
  readonly service: ServiceDefinition;
  /** The channel's dispatcher on `driver` outside a Nest application, for tests that hand it events by hand. */
  standalone(driver: HostChannelDriver, deps: StandaloneDependencies): KitDispatcher;
}

const HOSTING = new WeakMap<KitChannel, ChannelHosting>();

/** How to host `kit`: a kit made by this copy of the kit (defineChannel or defineHostChannel). */
export function hostingOf(kit: KitChannel): ChannelHosting {
  const hosting = HOSTING.get(kit);
  if (hosting === undefined) throw new Error(`channel ${kit.definition.name} was not made by this copy of @oncegate/dispatcher-kit's defineChannel`);
  return hosting;
}

/** What a dispatcher outside a Nest application runs on (its service gets them from the process's host). */
export interface StandaloneDependencies {
  readonly store: EventStore;
  readonly tools: ReadonlyMap<string, ToolContract>;
  readonly sealed: SealedStore;
  readonly vault: VaultService;
  readonly dispatcherId: string;
  readonly clock: Clock;
  /** Shared with authorization when it runs beside; a new cache by default. */
  readonly prepared?: PreparedCalls;
}

const CHANNEL_NAME = /^[a-z][a-z0-9-]*$/;

/** Makes a channel's dispatcher and service from its definition (docs/dispatchers.md). */
export function defineChannel(definition: ChannelDefinition): KitChannel {
  return defineHostChannel(definition);
}

/** defineChannel for the built-in channels, whose drivers read the host's view of each attempt (host-channel.ts). */
export function defineHostChannel(definition: HostChannelDefinition): KitChannel {
  if (!CHANNEL_NAME.test(definition.name)) throw new Error(`'${definition.name}' is not a channel name ([a-z][a-z0-9-]*)`);
  if (definition.contract === undefined && definition.credentialKinds !== undefined) {
    throw new Error(`channel ${definition.name}: credentialKinds needs a contract section (its host and port bind the credential)`);
  }
  const options = channelOptionsReader(definition);
  const channel: DispatchChannel = {
    channel: definition.name,
    async start({ host, vault, prepared, dispatcherId }) {
      const { store, tools, sealed, clock } = host;
      const notices = channelNotices(store, clock, definition.name, dispatcherId);
      const driver = await definition.open({
        log: new Logger(`dispatcher-${definition.name}`),
        tools: toolsOf(definition.name, tools),
        vault,
        sealed,
        options: options.read(host.config),
        notice: notices.notice,
      });
      try {
        const module = KitDispatcherModule.forRoot({ store, tools, sealed, vault, dispatcherId, clock, prepared, opened: { definition, driver } });
        const app = await microservice(host, module, `dispatcher-${definition.name}`);
        return {
          app,
          controller: app.get(KitDispatcher),
          close: async () => {
            await driver.close?.();
            await notices.flushed();
          },
        };
      } catch (error) {
        await driver.close?.().catch(() => undefined);
        throw error;
      }
    },
  };
  const sections = sectionChecks(definition);
  const service: ServiceDefinition = {
    ...dispatcherService(channel),
    // Its own process refuses a mistake in the channel's options before it opens anything.
    check: (config) => void options.read(config),
    ...(sections === undefined ? {} : { pluginChannels: sections }),
  };
  const kit: KitChannel = { definition: definition as ChannelDefinition, main: (argv) => serviceMain(service, argv) };
  HOSTING.set(kit, {
    definition,
    channel,
    service,
    standalone: (driver, deps) =>
      new KitDispatcher(deps.store, deps.tools, deps.sealed, deps.vault, deps.dispatcherId, deps.clock, deps.prepared ?? new PreparedCalls(deps.sealed), { definition, driver }),
  });
  return kit;
}

/** The tools of the process that name this channel. */
function toolsOf(channel: string, tools: ReadonlyMap<string, ToolContract>): ReadonlyMap<string, ToolContract> {
  return new Map([...tools].filter(([, tool]) => tool.channel === channel));
}

/**
 * The check of a channel's tools' sections: the classes it supports, then its own; undefined for a channel without a
 * section. Read from the definition alone, so that `oncegate contracts check --channel` applies the same check to a
 * channel built on another copy of the kit (its package).
 */
export function sectionCheckOf(definition: Pick<ChannelDefinition, 'name' | 'classes' | 'contract'>): PluginSectionCheck | undefined {
  const { contract, classes } = definition;
  if (contract === undefined) return undefined;
  const own = contractCheck(contract);
  const check: PluginSectionCheck = (section, report, tool) => {
    if (classes !== undefined && tool.operationClass !== undefined && !classes.includes(tool.operationClass)) {
      report([], `channel ${definition.name} recovers ${classes.join(', ')} calls; class ${tool.operationClass} is not one of them`);
    }
    own(section, report, tool);
  };
  return check;
}

function sectionChecks(definition: HostChannelDefinition): ReadonlyMap<string, PluginSectionCheck> | undefined {
  const check = sectionCheckOf(definition);
  return check === undefined ? undefined : new Map([[definition.name, check]]);
}
