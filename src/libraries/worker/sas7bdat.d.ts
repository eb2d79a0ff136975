// The sas7bdat package ships no types; the worker uses its reader class only (see sas.ts).
declare module 'sas7bdat' {
  const SAS7BDAT: unknown;
  export default SAS7BDAT;
}
