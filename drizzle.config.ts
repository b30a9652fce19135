/** drizzle-kit: `npm run db:generate` writes a migration in `migrations/` from the schema's changes. */
import { defineConfig } from 'drizzle-kit';

export default defineConfig({
  dialect: 'postgresql',
  schema: './packages/db/src/schema.ts',
  out: './migrations',
});
