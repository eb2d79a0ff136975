// picomatch ships no types; the one call the hub makes (trigger-files.ts).
declare module 'picomatch' {
  interface PicomatchOptions {
    dot?: boolean;
    nobrace?: boolean;
    noextglob?: boolean;
    noglobstar?: boolean;
    nonegate?: boolean;
    posix?: boolean;
  }
  function picomatch(pattern: string, options?: PicomatchOptions): (input: string) => boolean;
  export default picomatch;
}
