// The data source of the TypeORM CLI (`npm run migration:generate -- migrations/<Name>`), built
// from the compiled hub against DATABASE_URL. The app module is imported only so that every area
// declares its entities.
import 'reflect-metadata';
import { DataSource } from 'typeorm';
import '../src/app.module.js';
import { DatabaseModule } from '../src/common/database/database.module.js';
import { dataSourceOptions } from '../src/common/database/hub-database.js';

const url = process.env.DATABASE_URL;
if (!url) throw new Error('Set DATABASE_URL to the database to generate migrations against');

export default new DataSource(dataSourceOptions(url, DatabaseModule.entities()));
