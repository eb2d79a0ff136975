import { ApiProperty } from './openapi-decorators.js';

/** The `{msg}` reply of deletions and other operations that return a message. */
export class MessageDto {
  @ApiProperty({ example: "Namespace 'analytics' deleted" })
  msg!: string;
}

export function message(msg: string): MessageDto {
  return { msg };
}
