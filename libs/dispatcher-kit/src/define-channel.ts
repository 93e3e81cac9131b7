import { Logger, Module, type DynamicModule } from '@nestjs/common';
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
import type { ChannelDefinition, ChannelDriver } from './channel-definition';
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

/** A channel built on the kit: how a process hosts its dispatcher, and its service to run as a process of its own. */
export interface KitChannel {
  readonly definition: ChannelDefinition;
  /** Its dispatcher among the dispatchers of a process (`oncegate start` hosts the built-in channels this way). */
  readonly channel: DispatchChannel;
  /** `dispatcher-<name>`: the channel's service, one instance of its consumer group per process. */
  readonly service: ServiceDefinition;
  /** The main of the channel's own app: `node main.js [--config <file>]`. */
  main(argv?: readonly string[]): Promise<void>;
  /** The channel's dispatcher on `driver` outside a Nest application, for tests that hand it events by hand. */
  standalone(driver: ChannelDriver, deps: StandaloneDependencies): KitDispatcher;
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
  if (!CHANNEL_NAME.test(definition.name)) throw new Error(`'${definition.name}' is not a channel name ([a-z][a-z0-9-]*)`);
  if (definition.contract === undefined && definition.credentialKinds !== undefined) {
    throw new Error(`channel ${definition.name}: credentialKinds needs a contract section (its host and port bind the credential)`);
  }
  const options = channelOptionsReader(definition);
  const channel: DispatchChannel = {
    channel: definition.name,
    async start({ host, vault, prepared, dispatcherId }) {
      const { store, tools, sealed, clock } = host;
      const driver = await definition.open({ log: new Logger(`dispatcher-${definition.name}`), tools, vault, sealed, options: options.read(host.config) });
      try {
        const module = KitDispatcherModule.forRoot({ store, tools, sealed, vault, dispatcherId, clock, prepared, opened: { definition, driver } });
        const app = await microservice(host, module, `dispatcher-${definition.name}`);
        return { app, controller: app.get(KitDispatcher), close: () => driver.close?.() ?? Promise.resolve() };
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
  return {
    definition,
    channel,
    service,
    main: (argv) => serviceMain(service, argv),
    standalone: (driver, deps) =>
      new KitDispatcher(deps.store, deps.tools, deps.sealed, deps.vault, deps.dispatcherId, deps.clock, deps.prepared ?? new PreparedCalls(deps.sealed), { definition, driver }),
  };
}

/** The check a process hosting the channel applies to its tools' sections: the classes it supports, then its own. */
function sectionChecks(definition: ChannelDefinition): ReadonlyMap<string, PluginSectionCheck> | undefined {
  const { contract, classes } = definition;
  if (contract === undefined) return undefined;
  const own = contractCheck(contract);
  const check: PluginSectionCheck = (section, report, tool) => {
    if (classes !== undefined && tool.operationClass !== undefined && !classes.includes(tool.operationClass)) {
      report([], `channel ${definition.name} recovers ${classes.join(', ')} calls; class ${tool.operationClass} is not one of them`);
    }
    own(section, report, tool);
  };
  return new Map([[definition.name, check]]);
}
