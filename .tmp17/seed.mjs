import { seedMillion } from '../dist/bench/million.js';
await seedMillion(process.argv[2], { jobs: Number(process.argv[3]), others: Number(process.argv[4]) }, console.log);
