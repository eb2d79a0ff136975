import { DataSource } from 'typeorm';
import { dataSourceOptions, migrate } from '/work/wt-17/dist/src/common/database/hub-database.js';
const ds = new DataSource(dataSourceOptions(process.argv[2], [], 2));
await ds.initialize(); await migrate(ds); await ds.destroy();
