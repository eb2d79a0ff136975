import { ApiProperty } from '../../common/http/openapi-decorators.js';
import { IsNotEmpty, IsString, MaxLength } from 'class-validator';

export class LoginRequestDto {
  @ApiProperty({ example: 'admin' })
  @IsString()
  @IsNotEmpty()
  @MaxLength(256)
  username!: string;

  @ApiProperty({ example: 'correct horse battery staple', format: 'password' })
  @IsString()
  @IsNotEmpty()
  @MaxLength(1024)
  password!: string;
}

export class LoginResponseDto {
  @ApiProperty({ description: 'A JWT for `Authorization: Bearer`' })
  token!: string;

  @ApiProperty({ description: 'Lifetime of the token in seconds', example: 3600 })
  expiresIn!: number;
}
