// A fresh PostgreSQL schema for a test that runs outside Node (the Python SDK's tests,
// sdk/python/tests/harness.py), as isolatedDatabase() in db.ts makes one for a Node test:
//   node test/helpers/pg-schema.mjs create URL        prints the new schema's name
//   node test/helpers/pg-schema.mjs drop URL SCHEMA   drops it and all it holds
import { randomBytes } from 'node:crypto';
import pg from 'pg';

const [command, url, name] = process.argv.slice(2);
if (!url || (command !== 'create' && command !== 'drop') || (command === 'drop' && !/^t_[0-9a-f]{12}$/.test(name ?? ''))) {
  console.error('usage: pg-schema.mjs create URL | drop URL t_<12 hex>');
  process.exit(2);
}
const client = new pg.Client({ connectionString: url });
await client.connect();
try {
  if (command === 'create') {
    const schema = `t_${randomBytes(6).toString('hex')}`;
    await client.query(`create schema ${schema}`);
    console.log(schema);
  } else {
    await client.query(`drop schema if exists ${name} cascade`);
  }
} finally {
  await client.end();
}
