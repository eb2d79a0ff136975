import { ApiExtraModels, ApiProperty, ApiPropertyOptional } from '../http/openapi-decorators.js';

export class FieldErrorDto {
  @ApiProperty({ description: 'JSON Pointer into the body, or the name of the query parameter or header', example: '/name' })
  path!: string;

  @ApiProperty({ example: 'name must be 1-64 letters, digits, "_" or "-"' })
  message!: string;
}

/** The body of every error reply: RFC 9457 problem details, `application/problem+json`. */
@ApiExtraModels(FieldErrorDto)
export class ProblemDetailsDto {
  @ApiProperty({ example: 'about:blank' })
  type!: string;

  @ApiProperty({ description: 'The HTTP status phrase', example: 'Bad Request' })
  title!: string;

  @ApiProperty({ example: 400 })
  status!: number;

  @ApiProperty({ description: 'What went wrong, for people', example: 'Invalid request body: name must be 1-64 letters, digits, "_" or "-"' })
  detail!: string;

  @ApiProperty({
    description: 'The same text as `detail`, for clients of the product family',
    example: 'Invalid request body: name must be 1-64 letters, digits, "_" or "-"',
  })
  msg!: string;

  @ApiPropertyOptional({
    type: 'array',
    items: { oneOf: [{ $ref: '#/components/schemas/FieldErrorDto' }, { type: 'string' }] },
    description:
      'Validation errors: one {path, message} per invalid input; or, where an operation refuses what it was asked to run (submitting a pipeline, creating a run), one message per problem, each naming what it is about',
  })
  errors?: (FieldErrorDto | string)[];

  @ApiProperty({ description: 'The request id, also in the X-Request-Id header and the logs', example: '5f0c6a1e-4b8e-4a5e-9a55-0d7f3c1c2b11' })
  requestId!: string;
}
