import type { ShopDatabase } from './shop-database';
import { shopConnection } from './shop-database';

/** One SQL tool per class, on the shop: the contract the SQL channel's tests and its conformance run use. */
export function shopContract(shop: ShopDatabase, names: { readonly prefix: string } = { prefix: 'conformance_' }): string {
  const at = shopConnection(shop);
  const p = names.prefix;
  return `version: 1
tools:
  - name: ${p}read_only
    description: Read the price of a product.
    class: read_only
    channel: sql
    target: shop/prices
    credential_ref: shop-db
    input_schema: { type: object, properties: { sku: { type: string } }, required: [sku], additionalProperties: false }
    plugin: { ${at}, statement: "SELECT sku, cents FROM prices WHERE sku = $1", parameters: ["{{args.sku}}"] }
    limits: { connect_timeout: 2s, response_timeout: 2s }
    correlation_window: 10m
  - name: ${p}idempotent_write
    description: Set the price of a product.
    class: idempotent_write
    channel: sql
    target: shop/prices
    credential_ref: shop-db
    input_schema: { type: object, properties: { sku: { type: string }, cents: { type: integer } }, required: [sku, cents], additionalProperties: false }
    plugin: { ${at}, statement: "UPDATE prices SET cents = $1, changed_by = $2 WHERE sku = $3", parameters: ["{{args.cents}}", "{{execution.id}}", "{{args.sku}}"], expect_rows: 1 }
    limits: { connect_timeout: 2s, response_timeout: 2s }
    correlation_window: 10m
  - name: ${p}irreversible
    description: Record a payment.
    class: irreversible
    channel: sql
    target: shop/payments
    credential_ref: shop-db
    input_schema: { type: object, properties: { payee: { type: string }, cents: { type: integer } }, required: [payee, cents], additionalProperties: false }
    plugin: { ${at}, statement: "INSERT INTO payments (payee, cents, changed_by) VALUES ($1, $2, $3) RETURNING id", parameters: ["{{args.payee}}", "{{args.cents}}", "{{execution.id}}"] }
    limits: { connect_timeout: 2s, response_timeout: 2s }
    correlation_window: 10m
  - name: ${p}conditional_write
    description: Move a component's schema one version on.
    class: conditional_write
    channel: sql
    target: shop/schema
    credential_ref: shop-db
    input_schema: { type: object, properties: { component: { type: string }, from: { type: integer }, to: { type: integer } }, required: [component, from, to], additionalProperties: false }
    plugin:
      ${at.replaceAll(', ', '\n      ').replaceAll(': ', ': ')}
      statement: "UPDATE schema_versions SET version = $1, changed_by = $2 WHERE component = $3 AND version = $4"
      parameters: ["{{args.to}}", "{{execution.id}}", "{{args.component}}", "{{args.from}}"]
      expect_rows: 1
      status_query: { statement: "SELECT version FROM schema_versions WHERE component = $1", parameters: ["{{args.component}}"], column: version, equals: "{{args.from}}" }
    limits: { connect_timeout: 2s, response_timeout: 2s }
    correlation_window: 10m
`;
}
