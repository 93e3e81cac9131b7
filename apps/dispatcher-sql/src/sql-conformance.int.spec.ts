import { describeDispatcherConformance } from '@oncegate/dispatcher-kit/testing/vitest';
import { sqlKit } from './sql-channel';
import { openShopDatabase } from './testing/shop-database';
import { shopContract } from './testing/shop-tools';

// The SQL channel against a real PostgreSQL server, through the dispatcher kit's conformance suite.
describeDispatcherConformance(
  'sql (real PostgreSQL 15)',
  async () => {
    const shop = await openShopDatabase();
    return {
      kit: sqlKit,
      contract: shopContract(shop),
      credential: { ref: 'shop-db', kind: 'password', bindings: [`127.0.0.1:${shop.port}`], value: shop.password },
      target: {
        effects: (executionId) => shop.effects(executionId),
        // COMMIT reaches the server and commits; its answer is lost.
        loseNextAnswer: () => shop.proxy.loseNextAnswer('COMMIT\0'),
        // COMMIT reaches the server and commits; its answer is held back until the channel's deadline cuts it.
        withholdNextAnswer: () => shop.proxy.withholdNextAnswer('COMMIT\0'),
        faultStruck: () => shop.proxy.whenFired(),
        unreachable: (on) => shop.proxy.refuse(on),
      },
      args: (operationClass, n) => {
        switch (operationClass) {
          case 'read_only':
            return { sku: `sku-${n}` };
          case 'idempotent_write':
            return { sku: `sku-${n}`, cents: 100 + n };
          case 'irreversible':
            return { payee: `payee-${n}`, cents: n };
          default:
            return { component: `component-${n}`, from: 1, to: 2 };
        }
      },
      close: () => shop.stop(),
    };
  },
  { classes: ['read_only', 'idempotent_write', 'conditional_write', 'irreversible'], noEcho: 'a database does not answer with the password it was given' },
);
